#!/usr/bin/env python3
"""Writes the seed corpora in tests/fuzz/corpus/<target>/ (committed; rerun to regenerate).

Seeds are small valid inputs the fuzzers mutate from: a tiny safetensors file (written here
byte by byte), the model directory's JSON files, a few /v1/embeddings and /embed bodies, tiny
tokenizer.json files of each model type (built with `tokenizers`, which the test venv has), and
texts from STS-B plus edge cases. Run with the test venv:
  .venv/bin/python tests/fuzz/make_seeds.py
"""
import csv
import hashlib
import json
import shutil
import struct
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
STSB = REPO / "tests" / "data" / "stsb"
MODEL = REPO / "models" / "all-MiniLM-L6-v2"
CORPUS = HERE / "corpus"


def put(target, data):
    if isinstance(data, str):
        data = data.encode("utf-8")
    d = CORPUS / target
    d.mkdir(parents=True, exist_ok=True)
    (d / hashlib.sha1(data).hexdigest()[:16]).write_bytes(data)


def safetensors(tensors, metadata=None):
    """tensors: [(name, dtype, shape, raw bytes)] → the .safetensors bytes."""
    header, data = {}, b""
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    if metadata:
        header["__metadata__"] = metadata
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + data


def safetensors_seeds():
    f32 = struct.pack("<4f", 1.0, -2.0, 0.5, 3.25)
    f16 = struct.pack("<3e", 1.0, -0.5, 65504.0)
    bf16 = struct.pack("<2H", 0x3F80, 0xC000)
    put("safetensors_fuzz", safetensors(
        [("weight", "F32", [2, 2], f32), ("bias", "F16", [3], f16)], {"format": "pt"}))
    put("safetensors_fuzz", safetensors([("emb", "BF16", [1, 2], bf16), ("ids", "I64", [1], struct.pack("<q", 7)),
                                         ("scalar", "F64", [], struct.pack("<d", 2.5)), ("empty", "F32", [0, 4], b"")]))
    put("safetensors_fuzz", safetensors([]))


def torch_checkpoint_seeds():
    """torch.save archives: the state dicts PyTorch itself wrote for the reader's tests
    (tests/fixtures/torch_pt) and one from the BGE-M3 fixture's numpy writer."""
    import sys
    from collections import OrderedDict
    import numpy as np
    pt = REPO / "tests" / "fixtures" / "torch_pt"
    for name in ("linear.pt", "mixed.pt", "int64.pt", "view.pt", "not_a_dict.pt"):
        put("torch_checkpoint_fuzz", (pt / name).read_bytes())
    sys.path.insert(0, str(REPO / "tests" / "fixtures" / "bge_m3"))
    from build import write_torch_state_dict
    tmp = HERE / "corpus" / "sparse_linear.pt"
    write_torch_state_dict(tmp, OrderedDict(weight=np.full((1, 3), 0.5, np.float32),
                                            bias=np.zeros(1, np.float32)))
    put("torch_checkpoint_fuzz", tmp.read_bytes())
    tmp.unlink()


def config_seeds():
    for rel in ["config.json", "modules.json", "1_Pooling/config.json", "sentence_bert_config.json"]:
        put("config_fuzz", (MODEL / rel).read_bytes())
    # The model-family fixtures' configs (Qwen3 bidirectional, an XLM-R cross-encoder, NomicBERT and
    # NewModel in their published fields, DeBERTa-v3 and v2).
    fixtures = REPO / "models" / "fixtures"
    for name in ["qwen3-bidir", "xlmr-cross-encoder", "bert-classifier", "nomic-embed", "gte-embed",
                 "deberta-classifier", "deberta-cross-encoder"]:
        put("config_fuzz", (fixtures / name / "config.json").read_bytes())
    # sentence-transformers' current Pooling fields (pooling_mode, include_prompt: false).
    put("config_fuzz", (fixtures / "bert-instruct" / "1_Pooling" / "config.json").read_bytes())
    # The dual encoders' configs (issue 43: CLIP and SigLIP as transformers saves them).
    for name in ["clip", "siglip"]:
        put("config_fuzz", (REPO / "tests" / "fixtures" / "clip" / "models" / name / "config.json")
            .read_bytes())
    # What the conformance fixtures' releases wrote (issue 30): tokenizer_config.json with
    # transformers' int(1e30), a CrossEncoder's config_sentence_transformers.json, rotary scaling
    # in both layouts, sentence_bert_config.json with processor_kwargs.
    put("config_fuzz", '{"model_max_length": 1000000000000000019884624838656, "do_lower_case": true}')
    put("config_fuzz", '{"activation_fn": "torch.nn.modules.linear.Identity", "model_type": "CrossEncoder",'
                       ' "prompts": {"query": "q: "}, "similarity_fn_name": "manhattan"}')
    put("config_fuzz", '{"model_type": "llama", "vocab_size": 10, "hidden_size": 8, "num_hidden_layers": 1,'
                       ' "num_attention_heads": 2, "intermediate_size": 8, "max_position_embeddings": 64,'
                       ' "rope_scaling": {"type": "yarn", "factor": 4.0, "beta_fast": 16}}')
    put("config_fuzz", '{"model_type": "qwen2", "vocab_size": 10, "hidden_size": 8, "num_hidden_layers": 2,'
                       ' "num_attention_heads": 2, "intermediate_size": 8, "max_position_embeddings": 64,'
                       ' "use_sliding_window": true, "sliding_window": 4, "max_window_layers": 1,'
                       ' "rope_parameters": {"rope_type": "llama3", "factor": 8, "low_freq_factor": 1,'
                       ' "high_freq_factor": 4, "original_max_position_embeddings": 16, "rope_theta": 5e5}}')
    put("config_fuzz", '{"max_seq_length": 128, "processor_kwargs": {"model_max_length": 64}}')
    # jina-embeddings-v3 (transformers' config fields, Matryoshka widths) and a task adapter's
    # adapter_config.json as PEFT writes it (issue 32 item 3).
    put("config_fuzz", '{"architectures": ["JinaEmbeddingsV3Model"], "model_type": "jina_embeddings_v3",'
                       ' "vocab_size": 10, "hidden_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2,'
                       ' "intermediate_size": 16, "hidden_act": "gelu", "type_vocab_size": 1,'
                       ' "rope_parameters": {"rope_type": "default", "rope_theta": 20000.0},'
                       ' "matryoshka_dimensions": [2, 4, 8]}')
    put("config_fuzz", '{"peft_type": "LORA", "r": 4, "lora_alpha": 1, "lora_dropout": 0.0, "bias": "none",'
                       ' "target_modules": ["q_proj", "k_proj", "v_proj", "o_proj", "fc1", "fc2",'
                       ' "word_embeddings"], "use_rslora": false, "use_dora": false, "fan_in_fan_out": false,'
                       ' "rank_pattern": {}, "alpha_pattern": {}, "modules_to_save": null}')
    # A sharded checkpoint's index, as save_pretrained writes it.
    put("config_fuzz", (fixtures / "mistral-sharded" / "model.safetensors.index.json").read_bytes())


def request_seeds():
    for body in [
        {"input": "A man is playing a guitar.", "model": "all-MiniLM-L6-v2"},
        {"input": ["first", "second text"], "encoding_format": "base64", "dimensions": 128, "user": "u"},
        {"input": [101, 2023, 102], "truncate": True},
        {"input": [[101, 2023, 102], [101, 102]], "encoding_format": "float"},
        {"inputs": "tei style", "normalize": False, "truncate": True},
        {"inputs": ["a", "b"]},
        # Quantized outputs and truncation direction (issue 6).
        {"input": ["q"], "embedding_types": ["float", "int8", "ubinary"], "truncation_direction": "left"},
        {"input": "x", "encoding_format": "binary", "truncate": True},
        # Task adapters (Jina's task; issue 32 item 3).
        {"input": ["q"], "task": "retrieval.query", "dimensions": 32},
        {"inputs": "x", "task": "text-matching", "prompt_name": None},
        # The rerank routes: TEI /rerank, Cohere /v1/rerank, vLLM-style /v1/score.
        {"query": "q", "texts": ["a", "b c"], "truncate": True, "raw_scores": True, "return_text": True},
        {"model": "m", "query": "q", "documents": ["a", {"text": "b"}], "top_n": 1,
         "return_documents": True, "instruction": "Find it"},
        {"text_1": ["q1", "q2"], "text_2": ["d1", "d2"], "truncation_direction": "Right"},
        {"text_1": "q", "text_2": "d"},
        # BGE-M3: compute_score's modes and weights; /embed_multi's outputs.
        {"query": "q", "documents": ["a"], "score_mode": "colbert+sparse+dense",
         "score_weights": [0.4, 0.2, 0.4]},
        {"input": ["a", "b"], "return_dense": True, "return_sparse": False, "return_colbert_vecs": True},
        # TEI /predict: a text, a pair, a batch of both.
        {"inputs": "a text", "raw_scores": True},
        {"inputs": ["a", "b"], "truncate": True, "truncation_direction": "left"},
        {"inputs": ["a", ["b", "c"], "d e f"], "model": "m"},
        # TEI /similarity.
        {"inputs": {"source_sentence": "s", "sentences": ["a", "b c"]},
         "parameters": {"truncate": True, "truncation_direction": "left", "prompt_name": None}},
        # Cohere's /v2/embed and /v2/rerank, Hugging Face's text classification (issue 23).
        {"model": "m", "texts": ["a", "b"], "input_type": "search_query", "truncate": "START",
         "embedding_types": ["float", "base64"], "max_tokens": 8, "output_dimension": 64.0},
        {"inputs": [{"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}]},
        {"query": "q", "documents": ["a", "b"], "top_n": 1, "max_tokens_per_doc": 4096,
         "relevant_spans": {"mode": "disabled", "threshold": 0.1}},
        {"inputs": "a text", "parameters": {"top_k": 2, "function_to_apply": "sigmoid"}},
        # Images (issue 43): Jina's items, Infinity's modality, vLLM's messages, Cohere's images
        # and image_url parts.
        {"input": ["a", {"image": "QUJD"}, {"text": "b"}], "modality": "text"},
        {"input": ["data:image/png;base64,QUJD"], "modality": "image"},
        {"messages": [{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,QUJD"}}]}]},
        {"images": ["data:image/jpeg;base64,QUJD"], "input_type": "image"},
        {"inputs": [{"content": [{"type": "image_url", "image_url": "data:image/png;base64,AA=="}]},
                    {"content": [{"type": "text", "text": "t"}]}]},
    ]:
        put("embeddings_request_fuzz", json.dumps(body))
    put("embeddings_request_fuzz", '{"input": "\\u00e9\\ud83d\\ude00 escaped", "model": null}')
    # Regression: a repeated key's null used to leave an accepted request with no inputs.
    put("embeddings_request_fuzz", '{"input": "c", "input": null}')
    put("embeddings_request_fuzz", '{"inputs": "c", "inputs": null}')
    # Integers beyond 64 bits: valid JSON, read as doubles (issue 23).
    put("embeddings_request_fuzz", '{"input": [101, 2.0], "x": -400725404172496732160}')


def tokenizer_json_seeds():
    from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "man", "is", "play", "##ing", "the",
             "guitar", ".", ",", "##s", "h", "##e", "##l", "##o"]
    t = Tokenizer(models.WordPiece({w: i for i, w in enumerate(words)}, unk_token="[UNK]"))
    t.normalizer = normalizers.BertNormalizer(lowercase=True)
    t.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    t.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
    t.decoder = decoders.WordPiece()
    t.add_special_tokens(["[CLS]", "[SEP]", "[MASK]"])
    put("tokenizer_json_fuzz", t.to_str())
    # Regression: a vocab id near 2^31 used to size the id → token table (gigabytes).
    huge = json.loads(t.to_str())
    huge["model"]["vocab"]["guitar"] = 2147483000
    put("tokenizer_json_fuzz", json.dumps(huge))

    alphabet = pre_tokenizers.ByteLevel.alphabet()
    vocab = {c: i for i, c in enumerate(sorted(alphabet))}
    merges = [("Ġ", "t"), ("h", "e"), ("Ġt", "he"), ("i", "n"), ("in", "g")]
    for a, b in merges:
        vocab[a + b] = len(vocab)
    t = Tokenizer(models.BPE(vocab, merges))
    t.normalizer = normalizers.NFC()
    t.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    t.post_processor = processors.ByteLevel(trim_offsets=True)
    t.decoder = decoders.ByteLevel()
    t.add_special_tokens(["<|endoftext|>"])
    put("tokenizer_json_fuzz", t.to_str())

    vocab = {"<unk>": 0, "<0x41>": 1, "<0xC3>": 2, "<0xA9>": 3, "▁": 4, "h": 5, "e": 6, "he": 7, "▁he": 8}
    t = Tokenizer(models.BPE(vocab, [("h", "e"), ("▁", "he")], unk_token="<unk>", byte_fallback=True,
                             fuse_unk=True))
    t.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    t.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(),
                                   decoders.Strip(" ", 1, 0)])
    put("tokenizer_json_fuzz", t.to_str())

    pieces = [("<unk>", 0.0), ("<s>", 0.0), ("</s>", 0.0), ("▁", -2.0), ("a", -3.0), ("▁a", -1.5),
              ("man", -4.0), ("▁man", -2.5), ("s", -3.5), ("é", -5.0)]
    t = Tokenizer(models.Unigram(pieces, unk_id=0, byte_fallback=False))
    t.normalizer = normalizers.Sequence([normalizers.NFKC(), normalizers.Replace("  ", " ")])
    t.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
    t.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 1))
    t.decoder = decoders.Metaspace()
    put("tokenizer_json_fuzz", t.to_str())

    # The pre-tokenizers and normalizers matched by character classes, single_word, trim_offsets.
    t = Tokenizer(models.WordPiece({w: i for i, w in enumerate(words)}, unk_token="[UNK]"))
    t.normalizer = normalizers.Sequence([normalizers.NFKD(), normalizers.StripAccents(), normalizers.Lowercase()])
    t.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Whitespace(), pre_tokenizers.Punctuation("merged_with_next"),
        pre_tokenizers.Digits(individual_digits=True)])
    t.post_processor = processors.RobertaProcessing(("[SEP]", 3), ("[CLS]", 2), trim_offsets=True)
    t.add_tokens([AddedToken("man", single_word=True)])
    put("tokenizer_json_fuzz", t.to_str())


def text_seeds():
    texts = []
    for lang in ["en", "de", "ja", "ru", "zh"]:
        with open(STSB / f"stsb-{lang}-dev.csv", newline="", encoding="utf-8") as fh:
            for i, row in enumerate(csv.reader(fh)):
                if i >= 3:
                    break
                texts.append(row[0])
    texts += [
        "", " ", "\t\n\r  ", "a" * 300, "e\u0301\u0301 combining", "\u200b\u200dzero\u200cwidth\u2060",
        "👩‍👩‍👧‍👦 🤷🏽‍♀️ family", "שלום עולם مرحبا", "ＦＵＬＬ－ＷＩＤＴＨ１２３", "[CLS] <s> <|endoftext|> <mask>",
        "don't we'll I'M 12345678 3.14", "\x00\x01\x7f control",
    ]
    for target in ["wordpiece_fuzz", "bpe_fuzz", "unigram_fuzz"]:
        for t in texts:
            put(target, t)
        put(target, b"\xff\xfe\xc3 invalid utf-8 \xed\xa0\x80")
    # SigLIP v1's SentencePiece model (tests/fixtures/siglip_spm), as committed under its own name.
    spm = REPO / "tests" / "fixtures" / "siglip_spm" / "model" / "spiece.model"
    d = CORPUS / "sentencepiece_fuzz"
    d.mkdir(parents=True, exist_ok=True)
    (d / "siglip_spiece_model").write_bytes(spm.read_bytes())


def int8_check_seeds():
    """Kept int8 start-up checks (src/runtime/int8_check_format.cpp) under the fuzzer's key."""
    key = b"orchid int8 fuzz key\n"

    def check(samples, mean, lo, layers):
        out = b"orchid-int8-check 1\n" + struct.pack("<I", len(key)) + key
        out += struct.pack("<idd", samples, mean, lo) + struct.pack("<I", len(layers))
        for ranges in layers:
            out += struct.pack("<I", len(ranges)) + struct.pack(f"<{len(ranges)}f", *ranges)
        return out
    put("int8_check_fuzz", check(32, 0.9996, 0.9992, [[0.5, 2.0, 0.0, 7.25], [1.0] * 8]))
    put("int8_check_fuzz", check(0, 0.0, 0.0, []))
    put("int8_check_fuzz", check(3, 1.0, 0.99, [[], [3.5]]))


def main():
    if CORPUS.exists():
        shutil.rmtree(CORPUS)
    safetensors_seeds()
    torch_checkpoint_seeds()
    config_seeds()
    request_seeds()
    tokenizer_json_seeds()
    text_seeds()
    int8_check_seeds()
    for d in sorted(CORPUS.iterdir()):
        print(d.name, len(list(d.iterdir())))


if __name__ == "__main__":
    main()
