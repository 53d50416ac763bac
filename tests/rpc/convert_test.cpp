// proto ⇄ orchid conversions of the model-families fields: token types on sequences (mixed
// typed and untyped sequences), scorer model info, and info from workers that predate them.
#include "rpc/convert.h"

#include <gtest/gtest.h>

namespace orchid {
namespace {

TEST(ConvertTest, TokenTypesRoundTripPerSequence) {
  EmbedRequest in;
  in.sequences = {{5, 6}, {7, 8, 9}, {10}};
  in.token_type_ids = {{}, {0, 1, 1}, {}};
  v1::EmbedRequest msg;
  rpc::ToProto(std::move(in), &msg);
  ASSERT_EQ(msg.sequences_size(), 3);
  EXPECT_EQ(msg.sequences(0).token_type_ids_size(), 0);
  EXPECT_EQ(msg.sequences(1).token_type_ids_size(), 3);

  rpc::WorkerModel model;
  model.name = "m";
  model.info.vocab_size = 100;
  model.info.hidden_size = 4;
  model.max_input_tokens = 8;
  EmbedRequest out;
  int64_t tokens = 0;
  ASSERT_TRUE(rpc::FromProto(msg, model, &out, &tokens).ok());
  EXPECT_EQ(tokens, 6);
  ASSERT_EQ(out.token_type_ids.size(), 3u);
  EXPECT_TRUE(out.token_type_ids[0].empty());
  EXPECT_EQ(out.token_type_ids[1], (std::vector<int32_t>{0, 1, 1}));
  EXPECT_TRUE(out.token_type_ids[2].empty());

  // No sequence with types: no per-sequence entries at all.
  v1::EmbedRequest plain;
  plain.add_sequences()->add_token_ids(3);
  ASSERT_TRUE(rpc::FromProto(plain, model, &out, &tokens).ok());
  EXPECT_TRUE(out.token_type_ids.empty());
}

// Priority, class and flow cross the wire (issue 20); an older gateway's request (none set)
// reads as priority 0, classed by size at the worker, its own flow.
TEST(ConvertTest, SchedulingRoundTrips) {
  rpc::WorkerModel model;
  model.name = "m";
  model.info.vocab_size = 100;
  model.info.hidden_size = 4;
  model.max_input_tokens = 8;
  EmbedRequest in;
  in.sequences = {{5, 6}};
  in.scheduling.priority = -7;
  in.scheduling.request_class = RequestClass::kBulk;
  in.scheduling.flow = 0xABCDEF0123456789ull;
  v1::EmbedRequest msg;
  rpc::ToProto(std::move(in), &msg);
  EmbedRequest out;
  int64_t tokens = 0;
  ASSERT_TRUE(rpc::FromProto(msg, model, &out, &tokens).ok());
  EXPECT_EQ(out.scheduling.priority, -7);
  EXPECT_EQ(out.scheduling.request_class, RequestClass::kBulk);
  EXPECT_EQ(out.scheduling.flow, 0xABCDEF0123456789ull);

  v1::EmbedRequest old;
  old.add_sequences()->add_token_ids(3);
  ASSERT_TRUE(rpc::FromProto(old, model, &out, &tokens).ok());
  EXPECT_EQ(out.scheduling.priority, 0);
  EXPECT_EQ(out.scheduling.request_class, RequestClass::kAuto);
  EXPECT_EQ(out.scheduling.flow, 0u);

  old.set_request_class(static_cast<v1::RequestClass>(9));  // from a newer gateway
  EXPECT_EQ(rpc::FromProto(old, model, &out, &tokens).code(), StatusCode::kInvalidArgument);
}

TEST(ConvertTest, InfoCarriesTheScorerAndOlderWorkersReadAsEmbedders) {
  rpc::WorkerModel scorer;
  scorer.name = "ce";
  scorer.info.vocab_size = 100;
  scorer.info.hidden_size = 32;
  scorer.info.task = ModelTask::kScore;
  scorer.info.num_labels = 1;
  scorer.info.score_activation = ScoreActivation::kIdentity;
  scorer.info.pair_format = PairFormat::kQwen3RerankerChat;
  scorer.info.causal = true;
  scorer.info.max_seq_length_source = "tokenizer_config.json model_max_length";
  scorer.info.dtype = "int8";
  scorer.info.fidelity = {32, 0.9995, 0.9981};
  scorer.max_input_tokens = 512;
  v1::InfoResponse info;
  rpc::ToProto(scorer, 1024, &info);
  EXPECT_EQ(info.dim(), 1u);
  Result<rpc::WorkerModel> back = rpc::FromProto(info);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->info.task, ModelTask::kScore);
  EXPECT_EQ(back->info.hidden_size, 32);
  EXPECT_EQ(back->info.num_labels, 1);
  EXPECT_EQ(back->info.score_activation, ScoreActivation::kIdentity);
  EXPECT_EQ(back->info.pair_format, PairFormat::kQwen3RerankerChat);
  EXPECT_TRUE(back->info.causal);
  EXPECT_EQ(back->info.max_seq_length, 512);
  EXPECT_EQ(back->info.max_seq_length_source, "tokenizer_config.json model_max_length");
  EXPECT_EQ(back->info.dtype, "int8");
  EXPECT_EQ(back->info.fidelity.samples, 32);
  EXPECT_EQ(back->info.fidelity.mean_cosine, 0.9995);
  EXPECT_EQ(back->info.fidelity.min_cosine, 0.9981);

  // A dim that does not match the task's row width is refused.
  info.set_dim(32);
  EXPECT_FALSE(rpc::FromProto(info).ok());

  // A worker from before these fields: dim is the hidden size of an embedder.
  v1::InfoResponse old;
  old.set_model("minilm");
  old.set_dim(384);
  old.set_max_input_tokens(256);
  old.set_vocab_size(30522);
  back = rpc::FromProto(old);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->info.task, ModelTask::kEmbed);
  EXPECT_EQ(back->info.hidden_size, 384);
  EXPECT_EQ(back->info.output_dim(), 384);
  EXPECT_EQ(back->info.dtype, "");  // not told: /info leaves model_dtype out
  EXPECT_EQ(back->info.fidelity.samples, 0);
}

TEST(ConvertTest, InfoCarriesAClassifiersLabelNames) {
  rpc::WorkerModel classifier;
  classifier.name = "nli";
  classifier.info.vocab_size = 100;
  classifier.info.hidden_size = 32;
  classifier.info.task = ModelTask::kScore;
  classifier.info.num_labels = 3;
  classifier.info.labels = {"contradiction", "entailment", "neutral"};
  classifier.info.multi_label = true;
  classifier.max_input_tokens = 512;
  v1::InfoResponse info;
  rpc::ToProto(classifier, 1024, &info);
  Result<rpc::WorkerModel> back = rpc::FromProto(info);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->info.labels, classifier.info.labels);
  EXPECT_TRUE(back->info.multi_label);
  EXPECT_EQ(back->info.label(1), "entailment");

  // Names for some logits only: refused. None (an older worker): LABEL_<i>.
  info.mutable_labels()->RemoveLast();
  EXPECT_FALSE(rpc::FromProto(info).ok());
  info.clear_labels();
  back = rpc::FromProto(info);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_TRUE(back->info.labels.empty());
  EXPECT_EQ(back->info.label(2), "LABEL_2");
}

// What the gateway needs to shape requests: token types (1: the tokenizer's pair types are not
// sent), and an embedder's width after Dense modules (dim != hidden_size).
TEST(ConvertTest, InfoCarriesTokenTypesAndTheEmbeddingWidth) {
  rpc::WorkerModel m;
  m.name = "gemma";
  m.info.vocab_size = 100;
  m.info.hidden_size = 32;
  m.info.embedding_dim = 24;
  m.info.type_vocab_size = 1;
  m.max_input_tokens = 512;
  v1::InfoResponse info;
  rpc::ToProto(m, 1024, &info);
  EXPECT_EQ(info.dim(), 24u);
  Result<rpc::WorkerModel> back = rpc::FromProto(info);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->info.type_vocab_size, 1);
  EXPECT_EQ(back->info.hidden_size, 32);
  EXPECT_EQ(back->info.output_dim(), 24);
  // An older worker (no type_vocab_size): token types are passed on, as before.
  info.clear_type_vocab_size();
  back = rpc::FromProto(info);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->info.type_vocab_size, 2);
}

// ColBERT through the split (issue 32): a query's attended length (its [MASK] expansion is not
// attended to) travels per sequence; none set reads as no limits at all.
TEST(ConvertTest, AttendedLengthsRoundTripPerSequence) {
  rpc::WorkerModel model;
  model.name = "m";
  model.info.vocab_size = 100;
  model.info.hidden_size = 4;
  model.max_input_tokens = 8;
  EmbedRequest in;
  in.sequences = {{5, 6}, {7, 8, 9, 9}, {10}};
  in.attend_lens = {0, 3, 0};
  v1::EmbedRequest msg;
  rpc::ToProto(std::move(in), &msg);
  ASSERT_EQ(msg.sequences_size(), 3);
  EXPECT_EQ(msg.sequences(0).attend_len(), 0u);
  EXPECT_EQ(msg.sequences(1).attend_len(), 3u);
  EmbedRequest out;
  int64_t tokens = 0;
  ASSERT_TRUE(rpc::FromProto(msg, model, &out, &tokens).ok());
  EXPECT_EQ(out.attend_lens, (std::vector<int32_t>{0, 3, 0}));

  // Only the first sequence limited: the others read as 0.
  msg.mutable_sequences(0)->set_attend_len(1);
  msg.mutable_sequences(1)->set_attend_len(0);
  ASSERT_TRUE(rpc::FromProto(msg, model, &out, &tokens).ok());
  EXPECT_EQ(out.attend_lens, (std::vector<int32_t>{1, 0, 0}));

  v1::EmbedRequest plain;
  plain.add_sequences()->add_token_ids(3);
  ASSERT_TRUE(rpc::FromProto(plain, model, &out, &tokens).ok());
  EXPECT_TRUE(out.attend_lens.empty());

  // More than the sequence's tokens, or on a causal model: refused, naming the sequence.
  msg.mutable_sequences(2)->set_attend_len(2);
  Status st = rpc::FromProto(msg, model, &out, &tokens);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("sequence 2"), std::string::npos) << st.message();
  msg.mutable_sequences(2)->set_attend_len(1);
  ASSERT_TRUE(rpc::FromProto(msg, model, &out, &tokens).ok());
  model.info.causal = true;
  EXPECT_EQ(rpc::FromProto(msg, model, &out, &tokens).code(), StatusCode::kInvalidArgument);
}

// A ColBERT worker tells the gateway how texts become its tokens and how wide its token vectors
// are, under a task of its own (a gateway older than it keeps the worker out as an unknown
// task rather than answer for it as for a pooled embedder).
TEST(ConvertTest, InfoCarriesTheLateInteractionSettings) {
  rpc::WorkerModel m;
  m.name = "colbert";
  m.info.vocab_size = 100;
  m.info.hidden_size = 32;
  m.max_input_tokens = 512;
  LateInteraction& li = m.info.late_interaction;
  li.enabled = true;
  li.query_prefix = "[unused0]";
  li.document_prefix = "[unused1]";
  li.query_length = 40;
  li.document_length = 300;
  li.do_query_expansion = true;
  li.attend_to_expansion_tokens = true;
  li.skiplist_words = {"!", ",", "."};
  m.info.token_embedding_dim = 12;
  v1::InfoResponse info;
  rpc::ToProto(m, 1024, &info);
  EXPECT_EQ(info.task(), v1::MODEL_TASK_LATE_INTERACTION);
  EXPECT_EQ(info.dim(), 32u);
  EXPECT_EQ(info.token_dim(), 12u);
  Result<rpc::WorkerModel> back = rpc::FromProto(info);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->info.task, ModelTask::kEmbed);
  EXPECT_TRUE(back->info.late_interaction == li);
  EXPECT_EQ(back->info.token_dim(), 12);
  EXPECT_EQ(back->info.output_dim(), 32);

  // An embedder says nothing of it.
  rpc::WorkerModel plain = m;
  plain.info.late_interaction = LateInteraction();
  plain.info.token_embedding_dim = 0;
  v1::InfoResponse plain_info;
  rpc::ToProto(plain, 1024, &plain_info);
  EXPECT_EQ(plain_info.task(), v1::MODEL_TASK_EMBED);
  EXPECT_FALSE(plain_info.has_late_interaction());
  back = rpc::FromProto(plain_info);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_FALSE(back->info.late_interaction.enabled);
  EXPECT_EQ(back->info.token_dim(), 32);

  // The task without its settings, or settings out of range: refused.
  v1::InfoResponse bad = info;
  bad.clear_late_interaction();
  EXPECT_EQ(rpc::FromProto(bad).status().code(), StatusCode::kCorrupt);
  bad = info;
  bad.set_token_dim(0);
  EXPECT_EQ(rpc::FromProto(bad).status().code(), StatusCode::kCorrupt);
  bad = info;
  bad.mutable_late_interaction()->set_query_length(1);
  EXPECT_EQ(rpc::FromProto(bad).status().code(), StatusCode::kCorrupt);
  bad = info;
  bad.mutable_late_interaction()->set_document_length(1u << 30);
  EXPECT_EQ(rpc::FromProto(bad).status().code(), StatusCode::kCorrupt);
}

// Task adapters cross the wire by name (issue 32 item 3): the worker numbers them itself and
// refuses a task its model lacks; Info carries the tasks and the Matryoshka widths.
TEST(ConvertTest, TasksTravelByName) {
  rpc::WorkerModel m;
  m.name = "jina";
  m.info.vocab_size = 100;
  m.info.hidden_size = 48;
  m.info.tasks = {"retrieval.query", "retrieval.passage", "text-matching"};
  m.info.matryoshka_dimensions = {8, 16, 48};
  m.max_input_tokens = 512;
  v1::InfoResponse info;
  rpc::ToProto(m, 1024, &info);
  Result<rpc::WorkerModel> back = rpc::FromProto(info);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->info.tasks, m.info.tasks);
  EXPECT_EQ(back->info.matryoshka_dimensions, m.info.matryoshka_dimensions);
  info.add_matryoshka_dimensions(49);  // wider than the model
  EXPECT_EQ(rpc::FromProto(info).status().code(), StatusCode::kCorrupt);

  v1::EmbedRequest msg;
  msg.add_sequences()->add_token_ids(3);
  msg.set_task("text-matching");
  EmbedRequest out;
  int64_t tokens = 0;
  ASSERT_TRUE(rpc::FromProto(msg, m, &out, &tokens).ok());
  EXPECT_EQ(out.adapter, 3);
  msg.clear_task();
  ASSERT_TRUE(rpc::FromProto(msg, m, &out, &tokens).ok());
  EXPECT_EQ(out.adapter, 0);
  msg.set_task("separation");
  const Status st = rpc::FromProto(msg, m, &out, &tokens);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("retrieval.query, retrieval.passage, text-matching"),
            std::string::npos)
      << st.message();
}

}  // namespace
}  // namespace orchid
