#include "gateway/embedding_service.h"

#include <gtest/gtest.h>

#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <future>
#include <optional>
#include <string>
#include <vector>

#include "gateway/fake_tokenizer.h"
#include "tokenizer/static_input.h"
#include "worker/fake_engine.h"

namespace orchid {
namespace {

using testing::FakeEngine;
using testing::FakeTokenizer;

// A request with many texts is tokenized in slices on a real pool; rows stay in input order
// and the first failing input is the one reported, however the slices interleave.
TEST(EmbeddingServiceTest, ParallelTokenizationKeepsOrderAndFirstError) {
  FakeEngine engine(/*auto_complete=*/true, /*vocab_size=*/1000, /*max_seq_length=*/8);
  TokenBudgetScheduler scheduler(&engine, TokenBudgetSchedulerOptions{4096, 1 << 20, 2});
  LocalBackend backend(&scheduler);
  FakeTokenizer tokenizer;
  boost::asio::thread_pool pool(3);
  EmbeddingService service(&tokenizer, &backend, "m",
                           [&pool](Task t) { boost::asio::post(pool, std::move(t)); }, nullptr,
                           /*parallelism=*/4);
  auto call = [&service](EmbeddingsRequest r) {
    std::promise<EmbeddingReply> p;
    auto f = p.get_future();
    service.Embed(std::move(r), [&p](EmbeddingReply reply) { p.set_value(std::move(reply)); });
    return f.get();
  };
  for (int round = 0; round < 20; ++round) {
    EmbeddingsRequest r;
    int64_t expected_tokens = 0;
    for (int i = 0; i < 200; ++i) {
      std::string text;  // 1 + i % 5 words
      for (int w = 0; w <= i % 5; ++w) text.append(1, 'w').append(std::to_string(i)).append(1, ' ');
      r.texts.push_back(text);
      expected_tokens += 3 + i % 5;
    }
    EmbeddingReply reply = call(std::move(r));
    ASSERT_FALSE(reply.error) << reply.error->message;
    ASSERT_EQ(reply.embeddings.rows, 200);
    EXPECT_EQ(reply.prompt_tokens, expected_tokens);
    for (int i = 0; i < 200; ++i) {
      // FakeEngine rows: {first id, length, last id}: the length tells the inputs apart.
      ASSERT_EQ(reply.embeddings.row(i)[1], float(3 + i % 5)) << i;
    }
    EmbeddingsRequest bad;
    for (int i = 0; i < 200; ++i) {
      std::string text = i == 70 || i == 150 ? std::string("bad \xff") : std::string("ok ");
      if (i != 70 && i != 150) text.append(std::to_string(i));
      bad.texts.push_back(std::move(text));
    }
    EmbeddingReply err = call(std::move(bad));
    ASSERT_TRUE(err.error);
    EXPECT_EQ(err.error->param, "input[70]");
  }
  pool.join();
}

// Static models: texts without a token are zero rows in their places (others 400), per-token
// output gives them no token rows, and a request of such texts only never reaches the engine.
TEST(EmbeddingServiceTest, TextsWithoutTokensAreZeroRowsWhenAsked) {
  FakeEngine engine(/*auto_complete=*/true, /*vocab_size=*/1000, /*max_seq_length=*/8);
  TokenBudgetScheduler scheduler(&engine, TokenBudgetSchedulerOptions{4096, 1 << 20, 2});
  LocalBackend backend(&scheduler);
  // No special tokens: a text of spaces has no token.
  std::unique_ptr<Tokenizer> tokenizer =
      WithStaticInputRules(std::make_unique<FakeTokenizer>(), StaticInputRules{});
  boost::asio::thread_pool pool(2);
  EmbeddingService service(tokenizer.get(), &backend, "m",
                           [&pool](Task t) { boost::asio::post(pool, std::move(t)); });
  auto call = [&service](std::vector<std::string> texts, bool per_token = false) {
    EmbeddingsRequest r;
    r.texts = std::move(texts);
    r.per_token = per_token;
    std::promise<EmbeddingReply> p;
    auto f = p.get_future();
    service.Embed(std::move(r), [&p](EmbeddingReply reply) { p.set_value(std::move(reply)); });
    return f.get();
  };
  EmbeddingReply refused = call({"a b", " "});
  ASSERT_TRUE(refused.error);
  EXPECT_EQ(refused.error->param, "input[1]");

  service.set_empty_text_is_zero(true);
  EmbeddingReply reply = call({" ", "a b", "  ", "c d e", " "});
  ASSERT_FALSE(reply.error) << reply.error->message;
  ASSERT_EQ(reply.embeddings.rows, 5);
  EXPECT_EQ(reply.prompt_tokens, 5);
  for (int i : {0, 2, 4}) {
    for (int j = 0; j < reply.embeddings.dim; ++j) EXPECT_EQ(reply.embeddings.row(i)[j], 0.0f);
  }
  EXPECT_EQ(reply.embeddings.row(1)[1], 2.0f);  // FakeEngine: {first id, length, last id}
  EXPECT_EQ(reply.embeddings.row(3)[1], 3.0f);

  EmbeddingReply tokens = call({"a b", " ", "c d e"}, /*per_token=*/true);
  ASSERT_FALSE(tokens.error) << tokens.error->message;
  EXPECT_EQ(tokens.token_counts, (std::vector<int32_t>{2, 0, 3}));
  // Per-token rows ({id, position, 7} in FakeEngine): the five tokens of the other two, in order.
  ASSERT_EQ(tokens.embeddings.rows, 5);
  EXPECT_EQ(tokens.embeddings.row(2)[1], 0.0f);  // "c": position 0 of the third input
  EXPECT_EQ(tokens.embeddings.row(4)[1], 2.0f);

  const size_t batches = engine.num_batches();
  EmbeddingReply none = call({" ", "   "});
  ASSERT_FALSE(none.error) << none.error->message;
  EXPECT_EQ(none.embeddings.rows, 2);
  EXPECT_EQ(none.embeddings.data, std::vector<float>(2 * size_t(none.embeddings.dim), 0.0f));
  EXPECT_EQ(engine.num_batches(), batches);
  pool.join();
}

// Task adapters (jina-embeddings-v3): `task` (or its adapter folder's name), prompt_name naming
// a task, input_type mapped to one, none; each request's sequences reach the engine with its
// adapter and the task's prompt; a task the model lacks is a 400 naming the ones it has, and so
// is a Matryoshka width the model does not list.
TEST(EmbeddingServiceTest, TasksPickTheAdapterAndItsPrompt) {
  FakeEngine engine(/*auto_complete=*/true, /*vocab_size=*/1000, /*max_seq_length=*/32);
  engine.SetTasks(
      {"retrieval.query", "retrieval.passage", "separation", "classification", "text-matching"});
  TokenBudgetScheduler scheduler(&engine, TokenBudgetSchedulerOptions{4096, 1 << 20, 2});
  LocalBackend backend(&scheduler);
  FakeTokenizer tokenizer;
  boost::asio::thread_pool pool(2);
  EmbeddingService service(&tokenizer, &backend, "m",
                           [&pool](Task t) { boost::asio::post(pool, std::move(t)); });
  EncodeConfig prompts;
  prompts.prompts = {{"retrieval.query", "q q "}, {"retrieval.passage", ""}, {"other", "o "}};
  service.SetPrompts(prompts, std::nullopt);
  auto call = [&service](EmbeddingsRequest r) {
    std::promise<EmbeddingReply> p;
    auto f = p.get_future();
    service.Embed(std::move(r), [&p](EmbeddingReply reply) { p.set_value(std::move(reply)); });
    return f.get();
  };
  // The last batch's adapters and its first sequence's length (FakeTokenizer: a token per word
  // between [CLS] and [SEP]).
  auto last = [&engine]() { return engine.batch(engine.num_batches() - 1); };
  struct Case {
    std::optional<std::string> task, prompt_name, input_type;
    int adapter;
    int length;  // tokens of "a b" with the chosen prompt
  };
  const Case cases[] = {
      {std::nullopt, std::nullopt, std::nullopt, 0, 4},
      {"retrieval.query", std::nullopt, std::nullopt, 1, 6},
      {"retrieval_query", std::nullopt, std::nullopt, 1, 6},
      {"text-matching", std::nullopt, std::nullopt, 5, 4},
      {"text_matching", std::nullopt, std::nullopt, 5, 4},
      {std::nullopt, "retrieval.query", std::nullopt, 1, 6},
      {std::nullopt, std::nullopt, "query", 1, 6},
      {std::nullopt, std::nullopt, "document", 2, 4},
      {std::nullopt, std::nullopt, "clustering", 3, 4},
      {std::nullopt, std::nullopt, "classification", 4, 4},
      {"separation", "other", std::nullopt, 3, 5},  // prompt_name's own prompt, the task's adapter
      {std::nullopt, "other", std::nullopt, 0, 5},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.task.value_or("-") + " / " + c.prompt_name.value_or("-") + " / " +
                 c.input_type.value_or("-"));
    EmbeddingsRequest r;
    r.texts = {"a b"};
    r.task = c.task;
    r.prompt_name = c.prompt_name;
    r.input_type = c.input_type;
    EmbeddingReply reply = call(std::move(r));
    ASSERT_FALSE(reply.error) << reply.error->message;
    const RaggedBatch b = last();
    EXPECT_EQ(b.adapters.empty() ? 0 : b.adapters[0], c.adapter);
    EXPECT_EQ(b.seq_len(0), c.length);
  }
  // Token ids take a task too (no prompt).
  EmbeddingsRequest ids;
  ids.token_ids = {{5, 6, 7}};
  ids.task = "classification";
  ASSERT_FALSE(call(std::move(ids)).error);
  EXPECT_EQ(last().adapters, (std::vector<int32_t>{4}));

  EmbeddingsRequest bad;
  bad.texts = {"a"};
  bad.task = "retrieval";
  EmbeddingReply err = call(std::move(bad));
  ASSERT_TRUE(err.error);
  EXPECT_EQ(err.error->http_status, 400);
  EXPECT_EQ(err.error->param, "task");
  EXPECT_EQ(err.error->code, "invalid_task");
  EXPECT_NE(err.error->message.find("retrieval.query, retrieval.passage, separation, "
                                    "classification, text-matching"),
            std::string::npos)
      << err.error->message;
  pool.join();
}

TEST(EmbeddingServiceTest, ATaskOnAModelWithoutAdaptersIsRefused) {
  FakeEngine engine(/*auto_complete=*/true);
  TokenBudgetScheduler scheduler(&engine, TokenBudgetSchedulerOptions{4096, 1 << 20, 2});
  LocalBackend backend(&scheduler);
  FakeTokenizer tokenizer;
  EmbeddingService service(&tokenizer, &backend, "m", [](Task t) { t(); });
  EmbeddingsRequest r;
  r.texts = {"a"};
  r.task = "retrieval.query";
  std::optional<EmbeddingReply> got;
  service.Embed(std::move(r), [&got](EmbeddingReply reply) { got = std::move(reply); });
  ASSERT_TRUE(got && got->error);
  EXPECT_NE(got->error->message.find("no task adapters"), std::string::npos) << got->error->message;
  // input_type on such a model is a prompt choice only, as before: no adapter, no error.
  EmbeddingsRequest q;
  q.texts = {"a"};
  q.input_type = "query";
  std::promise<EmbeddingReply> p;
  auto f = p.get_future();
  service.Embed(std::move(q), [&p](EmbeddingReply reply) { p.set_value(std::move(reply)); });
  EXPECT_FALSE(f.get().error);
  EXPECT_TRUE(engine.batch(engine.num_batches() - 1).adapters.empty());
}

}  // namespace
}  // namespace orchid
