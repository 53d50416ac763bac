#include "gateway/embedding_service.h"

#include <gtest/gtest.h>

#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <future>
#include <string>
#include <vector>

#include "gateway/fake_tokenizer.h"
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

}  // namespace
}  // namespace orchid
