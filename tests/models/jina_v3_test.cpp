// jina-embeddings-v3 with its task adapters (issue 32 item 3) through LoadModel + CpuEngine
// against transformers + PEFT. tests/fixtures/jina_v3/build.py writes the random-weight
// checkpoints (`make fixtures`, numpy only: models/fixtures/jina-v3 in the names transformers'
// save_pretrained writes, jina-v3-split in its in-memory names with a fused Wqkv LoRA);
// reference/<model>.json holds, per task (none, and each adapter), the token ids of the task's
// prompt + each text and the embedding transformers + PEFT computed (make_reference.py there).
// Every row must reach cosine >= 0.99999, in batches of one task and in one batch that mixes
// every task, where each row must come out exactly as in its one-task batch.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "description/registry.h"
#include "runtime/cpu_engine.h"
#include "support/test_support.h"

namespace orchid {
namespace {

using orchid::testing_util::Cosine;

const std::string kModels = ORCHID_SOURCE_DIR "/models/fixtures";
const std::string kReference = ORCHID_SOURCE_DIR "/tests/fixtures/jina_v3/reference";

struct Row {
  int adapter = 0;  // 0: none; i: tasks[i - 1]
  std::vector<int32_t> ids;
  std::vector<double> expected;
};

struct Reference {
  std::vector<std::string> tasks;
  std::vector<Row> rows;
};

Reference Read(const std::string& name) {
  Reference r;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  const std::string path = kReference + "/" + name + ".json";
  if (!testing_util::LoadJson(parser, path, &doc)) return r;
  for (auto t : doc["tasks"].get_array()) r.tasks.emplace_back(std::string_view(t.get_string()));
  for (auto c : doc["cases"].get_array()) {
    Row row;
    std::string_view task;
    if (!c["task"].get_string().get(task)) {
      for (size_t i = 0; i < r.tasks.size(); ++i) {
        if (r.tasks[i] == task) row.adapter = int(i) + 1;
      }
      EXPECT_GT(row.adapter, 0) << task;
    }
    row.ids = testing_util::Int32Array(c["ids"].value());
    row.expected = testing_util::DoubleArray(c["expected"].value());
    r.rows.push_back(std::move(row));
  }
  return r;
}

std::unique_ptr<Engine> Load(const std::string& name) {
  const std::string dir = kModels + "/" + name;
  if (!std::filesystem::exists(dir + "/config.json")) {
    ADD_FAILURE() << dir << " is missing: run `make fixtures` (tests/fixtures/jina_v3/build.py)";
    return nullptr;
  }
  auto model = LoadModel(dir, {});
  if (!model.ok()) {
    ADD_FAILURE() << model.status().ToString();
    return nullptr;
  }
  return MakeCpuEngine(std::move(model).value(), {.num_threads = 2});
}

Embeddings Run(Engine* engine, const std::vector<const Row*>& rows) {
  const ModelInfo& info = engine->info();
  RaggedBatch b;
  for (const Row* r : rows) {
    b.Add(r->ids.data(), int(r->ids.size()), info.default_pooling, info.default_normalize, nullptr,
          0, 0, r->adapter);
  }
  Result<Embeddings> out = engine->Submit(std::move(b)).wait();
  EXPECT_TRUE(out.ok()) << out.status().ToString();
  return out.ok() ? std::move(out).value() : Embeddings{};
}

void CheckModel(const std::string& name) {
  SCOPED_TRACE(name);
  const Reference ref = Read(name);
  ASSERT_EQ(ref.tasks.size(), 5u);
  ASSERT_EQ(ref.rows.size() % 6, 0u);
  auto engine = Load(name);
  ASSERT_NE(engine, nullptr);
  const ModelInfo& info = engine->info();
  EXPECT_EQ(info.tasks, ref.tasks);
  EXPECT_EQ(info.default_pooling, Pooling::kMean);
  EXPECT_TRUE(info.default_normalize);
  const int dim = info.output_dim();

  // One batch per task.
  std::map<int, std::vector<const Row*>> by_task;
  for (const Row& r : ref.rows) by_task[r.adapter].push_back(&r);
  ASSERT_EQ(by_task.size(), 6u);
  std::map<const Row*, std::vector<float>> alone;
  double worst = 1;
  for (const auto& [adapter, rows] : by_task) {
    const Embeddings out = Run(engine.get(), rows);
    ASSERT_EQ(out.rows, int(rows.size()));
    ASSERT_EQ(out.dim, dim);
    for (size_t i = 0; i < rows.size(); ++i) {
      const double c = Cosine(out.row(int(i)), rows[i]->expected);
      worst = std::min(worst, c);
      EXPECT_GE(c, 0.99999) << "task " << adapter << " row " << i;
      alone[rows[i]].assign(out.row(int(i)), out.row(int(i)) + dim);
    }
  }
  // The tasks differ (the adapters are applied): a text's rows under two tasks are far apart.
  const std::vector<const Row*>& base = by_task.at(0);
  const std::vector<const Row*>& query = by_task.at(1);
  EXPECT_LT(Cosine(alone[base[0]].data(), query[0]->expected), 0.999);

  // Every task in one batch, interleaved: each row exactly as in its one-task batch.
  std::vector<const Row*> mixed;
  for (size_t i = 0; i < ref.rows.size(); ++i) {
    mixed.push_back(&ref.rows[(i * 7) % ref.rows.size()]);  // 7 is prime to the row count
  }
  const Embeddings out = Run(engine.get(), mixed);
  ASSERT_EQ(out.rows, int(mixed.size()));
  for (size_t i = 0; i < mixed.size(); ++i) {
    const std::vector<float>& want = alone[mixed[i]];
    for (int j = 0; j < dim; ++j) {
      ASSERT_EQ(out.row(int(i))[j], want[size_t(j)]) << "mixed row " << i << " value " << j;
    }
  }
  std::printf("%s: min cosine against transformers + PEFT %.9f over %zu rows\n", name.c_str(),
              worst, ref.rows.size());
}

TEST(JinaV3Test, EveryTaskMatchesTransformersAndPeft) { CheckModel("jina-v3"); }

TEST(JinaV3Test, InMemoryNamesAndFusedQkvAdapterMatchToo) { CheckModel("jina-v3-split"); }

TEST(JinaV3Test, DescriptionListsTasksAndMatryoshkaDimensions) {
  auto spec = DescribeModel(kModels + "/jina-v3");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->family, FamilyKind::kRopeEncoder);
  EXPECT_EQ(spec->info.tasks,
            (std::vector<std::string>{"retrieval.query", "retrieval.passage", "separation",
                                      "classification", "text-matching"}));
  EXPECT_EQ(spec->info.matryoshka_dimensions, (std::vector<int>{8, 16, 24, 32, 48}));
  ASSERT_EQ(spec->adapters.size(), 5u);
  EXPECT_EQ(spec->adapters[0].folder, "retrieval_query");
  EXPECT_DOUBLE_EQ(spec->adapters[0].scale(), 0.25);  // lora_alpha 1 / r 4
}

TEST(JinaV3Test, AnAdapterIndexOutsideTheModelIsRefused) {
  auto engine = Load("jina-v3");
  ASSERT_NE(engine, nullptr);
  const std::vector<int32_t> ids = {0, 100, 2};
  RaggedBatch b;
  b.Add(ids.data(), 3, Pooling::kMean, true, nullptr, 0, 0, 6);
  Result<Embeddings> out = engine->Submit(std::move(b)).wait();
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().ToString().find("task adapter 6"), std::string::npos)
      << out.status().ToString();
}

}  // namespace
}  // namespace orchid
