// The built-in texts of --dtype int8's start-up (int8_samples.h). Written for orchid; two
// disjoint sets, each mixing languages and scripts, lengths from a few words to a few hundred
// tokens, and the shapes of text an index sees (questions, passages, code, lists, numbers).
#include "runtime/int8_samples.h"

#include "tokenizer/tokenizer.h"

namespace orchid {

const std::vector<std::string_view>& Int8CalibrationTexts() {
  static const std::vector<std::string_view> texts = {
      "how do I reset my password",
      "A man is playing a guitar on the street.",
      "What is the capital of Australia?",
      "Canberra was chosen as the capital in 1908 as a compromise between Sydney and Melbourne.",
      "Der Zug nach Hamburg hat heute zwanzig Minuten Verspätung.",
      "Les enfants jouent dans le parc pendant que leurs parents discutent sur un banc.",
      "¿Dónde está la estación de autobuses más cercana?",
      "今天下午会下雨，请记得带伞。",
      "東京タワーは1958年に完成した電波塔です。",
      "Москва — крупнейший город России по численности населения.",
      "القهوة العربية تقدم عادة مع التمر.",
      "O restaurante abre às sete da manhã e fecha à meia-noite.",
      "def mean(xs):\n    return sum(xs) / len(xs) if xs else 0.0",
      "SELECT name, COUNT(*) FROM orders WHERE status = 'shipped' GROUP BY name;",
      "Error 504: upstream request timeout after 30000 ms (id=7f3a-91c2)",
      "1. Preheat the oven to 200 °C.\n2. Slice the potatoes thinly.\n3. Bake for 35 minutes.",
      "The patient reported mild headaches and was prescribed 400 mg of ibuprofen twice a day.",
      "Quarterly revenue rose 12% to $4.3 billion, driven by strong demand for cloud services, "
      "while operating margins narrowed slightly because of higher data-centre depreciation.",
      "Photosynthesis converts light energy into chemical energy. In the chloroplasts of plant "
      "cells, chlorophyll absorbs mostly blue and red light, and the energy drives the splitting "
      "of water molecules, releasing oxygen as a by-product. The hydrogen ions and electrons "
      "freed in this step are used to produce ATP and NADPH, which the Calvin cycle then spends "
      "to fix carbon dioxide from the air into three-carbon sugars. Those sugars feed the plant's "
      "growth and, through food chains, nearly every other living thing on land. Factors such as "
      "light intensity, temperature and the concentration of carbon dioxide limit the rate of "
      "the process, and plants in hot, dry climates have evolved variants (C4 and CAM "
      "photosynthesis) that reduce water loss while keeping carbon fixation efficient.",
      "Die Energiewende bezeichnet den Übergang von fossilen und nuklearen Energieträgern zu "
      "erneuerbaren Quellen wie Wind, Sonne und Biomasse. Deutschland hat dafür das "
      "Erneuerbare-Energien-Gesetz eingeführt, das Betreibern neuer Anlagen über viele Jahre "
      "feste Vergütungen garantierte. Kritiker verweisen auf die hohen Strompreise für "
      "Haushalte, Befürworter auf sinkende Kosten für Solarmodule und den Rückgang der "
      "Treibhausgasemissionen seit 1990.",
      "机器学习是人工智能的一个分支，它使计算机能够在没有明确编程的情况下从数据中学习。"
      "常见的方法包括监督学习、无监督学习和强化学习。近年来，深度神经网络在图像识别、"
      "语音识别和自然语言处理等领域取得了显著进展，但也带来了对计算资源和训练数据的巨大需求。",
      "La Révolution française commence en 1789 avec la convocation des États généraux et la "
      "prise de la Bastille. Elle met fin à la monarchie absolue, proclame la Déclaration des "
      "droits de l'homme et du citoyen et transforme durablement les institutions du pays.",
      "Install the package, then run the server with the default model; it listens on port 8080 "
      "and answers OpenAI-compatible embedding requests. Use --threads to bound the cores it "
      "uses, and --max-batch-tokens to bound the memory of one batch.",
      "cheap flights london to new york december",
      "best vegan restaurants near me open now",
      "사용자 설명서를 주의 깊게 읽어 주십시오.",
      "बच्चे स्कूल जाने के लिए बस का इंतज़ार कर रहे हैं।",
      "Il gatto dorme sul divano tutto il pomeriggio.",
      "The committee will meet on Tuesday, 14 March, at 10:30 in room B-204 to review the budget "
      "proposals submitted by each department.",
      "Two dogs are running through a field of tall grass.",
      "Is it safe to take aspirin with coffee?",
      "git rebase -i HEAD~3 lets you squash, reorder or edit the last three commits.",
  };
  return texts;
}

const std::vector<std::string_view>& Int8GateTexts() {
  static const std::vector<std::string_view> texts = {
      "where can I buy a second-hand bicycle",
      "A woman is slicing an onion in the kitchen.",
      "Who wrote the novel One Hundred Years of Solitude?",
      "Gabriel García Márquez published Cien años de soledad in 1967.",
      "Das Museum ist montags geschlossen.",
      "Je voudrais réserver une table pour deux personnes ce soir.",
      "El río Amazonas atraviesa varios países de América del Sur.",
      "这家餐厅的饺子非常好吃，价格也很便宜。",
      "明日の会議は午後三時に始まります。",
      "Вчера вечером мы смотрели новый фильм в кинотеатре.",
      "يدرس الطلاب في المكتبة حتى وقت متأخر من الليل.",
      "A praia estava cheia de turistas no fim de semana.",
      "for (size_t i = 0; i < n; ++i) sum += a[i] * b[i];",
      "curl -X POST localhost:8080/v1/embeddings -d '{\"input\": \"hello\"}'",
      "Invoice #2024-0917: 3 × widgets at €12.50, VAT 19%, total €44.63",
      "- milk\n- eggs\n- flour\n- butter",
      "The court ruled that the contract was void because one party had not been informed of "
      "the material risks before signing.",
      "The volcano erupted early on Sunday morning, sending a column of ash eight kilometres "
      "into the sky and forcing the evacuation of several nearby villages.",
      "The history of the printing press begins long before Gutenberg. Woodblock printing was "
      "used in China by the seventh century, and movable type made of baked clay was described "
      "by Bi Sheng around 1040. In Korea, metal movable type was in use by the thirteenth "
      "century. Gutenberg's contribution, around 1450 in Mainz, was a complete system: a hand "
      "mould for casting uniform metal type, an oil-based ink that adhered to metal, and a press "
      "adapted from those used for wine and paper. Within fifty years, presses were operating "
      "in more than two hundred cities across Europe, and millions of books had been printed. "
      "The speed at which ideas could now travel changed religion, science and politics: "
      "pamphlets spread the Reformation, scientists could build on each other's published "
      "results, and literacy slowly became something ordinary people could expect to have.",
      "Der Schwarzwald ist ein Mittelgebirge im Südwesten Deutschlands. Er ist bekannt für "
      "seine dichten Nadelwälder, die Kuckucksuhren und die Schwarzwälder Kirschtorte. Viele "
      "Wanderwege führen durch die Täler und über die Höhen, und im Winter kommen Skifahrer "
      "auf den Feldberg, den höchsten Gipfel der Region.",
      "长城是中国古代的军事防御工程，修建历史可以追溯到春秋战国时期。明朝时期对长城进行了"
      "大规模的修缮和扩建，今天人们看到的大部分城墙都建于那个时代。"
      "长城在1987年被列入世界遗产名录。",
      "El aprendizaje automático permite a los sistemas mejorar su rendimiento a partir de la "
      "experiencia. Un modelo se entrena con ejemplos etiquetados y después se evalúa con datos "
      "que no ha visto, para comprobar que generaliza en lugar de memorizar.",
      "To replace a flat tyre, loosen the wheel nuts slightly, raise the car with the jack, "
      "remove the nuts and the wheel, fit the spare, tighten the nuts by hand, lower the car and "
      "then tighten them fully in a star pattern.",
      "symptoms of vitamin d deficiency",
      "python list comprehension with two conditions",
      "오늘 저녁에 친구들과 영화를 볼 예정입니다.",
      "दिल्ली भारत की राजधानी है।",
      "La pizza margherita fu creata a Napoli nel 1889.",
      "Please find attached the signed agreement; let me know if anything needs to change before "
      "Friday.",
      "A child is riding a horse on the beach.",
      "How long does it take to boil an egg?",
      "docker run --rm -p 8080:8080 -v $PWD/models:/models image:latest",
  };
  return texts;
}

Result<RaggedBatch> EncodeSampleBatch(const Tokenizer& tokenizer,
                                      const std::vector<std::string_view>& texts, size_t max_length,
                                      const ModelInfo& info) {
  RaggedBatch batch;
  EncodeOptions options;
  options.max_length = max_length;
  Encoding enc;
  for (std::string_view text : texts) {
    ORCHID_RETURN_IF_ERROR(tokenizer.Encode(text, options, &enc));
    if (enc.ids.empty()) continue;
    batch.Add(enc.ids.data(), int(enc.ids.size()), info.default_pooling, /*norm=*/true);
  }
  return batch;
}

}  // namespace orchid
