// `orchid embed --model DIR --input FILE.jsonl --output OUT.npy|OUT.jsonl`: offline bulk
// embedding of a file (building or re-indexing a vector database), through the same tokenizer,
// prompts, truncation, scheduler and engine as `orchid serve`, without HTTP.
//
// Input: JSON Lines, each a JSON string or an object whose `--field` (default "text") is one;
// blank lines are skipped. A CLIP / SigLIP model also takes images: an object whose "image" is a
// file's path (relative to the current folder) or a data:image/ URI, a string that is such a URI,
// or --input a folder, whose .jpg / .jpeg / .png / .webp / .gif files are embedded in name order
// (each file's name its "id"). Output, by extension: `.npy`, a float32 [inputs, dim] matrix
// (numpy's format 1.0), or `.jsonl`, one {"index", "id"?, "embedding"} per input in input order
// (`id` copied from an input object that has one). The output is written to OUT.partial and renamed
// when every input is embedded: a failed run leaves no half-written file behind.
//
// A late-interaction (ColBERT) model gives each input one vector per kept token, as PyLate's
// encode(is_query=...) (--input-type query or document, the default): `.npy` is then a float32
// [vectors, token_dim] matrix of every input's vectors one after the other, with
// OUT.offsets.npy beside it, int64 [inputs + 1]: input i owns rows offsets[i] .. offsets[i+1];
// `.jsonl` lines carry "embedding" as an array of vectors.
//
// Chunks of --chunk inputs go to the scheduler, up to --in-flight at once, so the engine stays
// busy while the next chunk is tokenized; rows are written in input order as chunks finish.
#include <simdjson.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "cli/commands.h"
#include "cli/serving.h"
#include "description/registry.h"
#include "description/static_embedding.h"
#include "gateway/embed_backend.h"
#include "gateway/embedding_service.h"
#include "gateway/json_writer.h"
#include "tokenizer/tokenizer.h"

namespace orchid::cli {
namespace {

struct EmbedOptions {
  std::string model;
  std::string input;
  std::string output;
  std::string field = "text";
  int chunk = 256;
  int in_flight = 4;
  bool truncate = false;
  std::string truncation_direction = "right";
  std::optional<int64_t> dimensions;
  std::optional<std::string> prompt_name;
  std::optional<std::string> input_type;
  std::optional<std::string> task;
  std::optional<std::string> default_prompt;
  bool quiet = false;
  SchedulerFlags scheduler;
};

// One input line: its text, its line number, and its object's "id" as raw JSON (if any).
struct Line {
  std::string text;
  size_t number = 0;
  std::string id_json;
  bool image = false;  // `text` is an image's path, or its data URI
};

// Reads the next non-blank line into *out; false at the end of the file. A line that is not a
// JSON string or an object with a string `field` is an error naming the file and line.
Result<bool> NextLine(std::istream& in, const EmbedOptions& o, size_t* number,
                      simdjson::dom::parser* parser, Line* out) {
  std::string raw;
  while (std::getline(in, raw)) {
    ++*number;
    if (raw.find_first_not_of(" \t\r") == std::string::npos) continue;
    auto where = [&] { return o.input + ":" + std::to_string(*number) + ": "; };
    simdjson::dom::element doc;
    if (auto err = parser->parse(raw).get(doc)) {
      return Status::InvalidArgument(where() + "not JSON (" + simdjson::error_message(err) + ")");
    }
    simdjson::dom::element text = doc;
    out->id_json.clear();
    out->image = false;
    if (doc.type() == simdjson::dom::element_type::OBJECT) {
      if (doc[o.field].get(text) != simdjson::SUCCESS) {
        out->image = doc["image"].get(text) == simdjson::SUCCESS;
        if (!out->image) {
          return Status::InvalidArgument(where() + "the object has no \"" + o.field +
                                         "\" (nor \"image\")");
        }
      }
      simdjson::dom::element id;
      if (doc["id"].get(id) == simdjson::SUCCESS) out->id_json = simdjson::minify(id);
    }
    std::string_view s;
    if (text.get_string().get(s) != simdjson::SUCCESS || s.empty()) {
      return Status::InvalidArgument(where() +
                                     "expected a non-empty JSON string, or an object "
                                     "whose \"" +
                                     o.field + "\" is one");
    }
    out->text.assign(s);
    out->number = *number;
    return true;
  }
  return false;
}

// numpy format 1.0: magic, version, header length (little-endian uint16), then a dict literal
// padded with spaces to `size` bytes in all, ending in '\n'.
std::string NpyHeader(size_t size, const std::string& descr, const std::string& shape) {
  std::string dict =
      "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (" + shape + "), }";
  std::string header("\x93NUMPY\x01\x00", 8);
  const size_t len = size - 10;
  header.push_back(char(len & 0xff));
  header.push_back(char(len >> 8));
  dict.resize(len - 1, ' ');
  return header + dict + "\n";
}

// Moves `from` to `to`; an error naming both.
Status Rename(const std::string& from, const std::string& to) {
  std::error_code ec;
  std::filesystem::rename(from, to, ec);
  if (ec) return Status::IoError("cannot rename " + from + " to " + to + ": " + ec.message());
  return Status::Ok();
}

// Writes rows as they come: numpy .npy (header rewritten with the final shape) or JSON Lines.
// Per token (late interaction): each input's rows are its token vectors (token_counts).
class RowWriter {
 public:
  static Result<std::unique_ptr<RowWriter>> Open(const std::string& path, bool per_token) {
    auto w = std::unique_ptr<RowWriter>(new RowWriter);
    w->per_token_ = per_token;
    const std::string ext = std::filesystem::path(path).extension().string();
    if (ext == ".npy") {
      w->npy_ = true;
    } else if (ext != ".jsonl") {
      return Status::InvalidArgument("--output " + path + ": the extension must be .npy or .jsonl");
    }
    w->path_ = path;
    w->partial_ = path + ".partial";
    w->out_.open(w->partial_, std::ios::binary | std::ios::trunc);
    if (!w->out_) return Status::IoError("cannot write " + w->partial_);
    if (w->npy_) w->out_.write(std::string(kNpyHeader, ' ').data(), kNpyHeader);  // placeholder
    return w;
  }

  Status Write(const EmbeddingReply& reply, const std::vector<Line>& lines, size_t first_index) {
    const Embeddings& m = reply.embeddings;
    if (dim_ < 0) dim_ = m.dim;
    if (m.dim != dim_) return Status::Internal("rows changed width");
    // Each input's first row: one row per input, or its token vectors.
    std::vector<size_t> first(lines.size() + 1, 0);
    for (size_t i = 0; i < lines.size(); ++i) {
      const size_t n = !per_token_                     ? 1
                       : i < reply.token_counts.size() ? size_t(reply.token_counts[i])
                                                       : size_t(0);
      first[i + 1] = first[i] + n;
    }
    if (first.back() != size_t(m.rows) ||
        (per_token_ && reply.token_counts.size() != lines.size())) {
      return Status::Internal("the engine answered " + std::to_string(m.rows) + " rows for " +
                              std::to_string(lines.size()) + " inputs");
    }
    if (npy_) {
      out_.write(reinterpret_cast<const char*>(m.data.data()),
                 std::streamsize(m.data.size() * sizeof(float)));
    } else {
      std::string buf;
      for (size_t i = 0; i < lines.size(); ++i) {
        buf.clear();
        JsonWriter w(&buf);
        w.BeginObject().Key("index").Int(int64_t(first_index + i));
        if (!lines[i].id_json.empty()) w.Key("id").Raw(lines[i].id_json);
        w.Key("embedding");
        if (per_token_) w.BeginArray();
        for (size_t r = first[i]; r < first[i + 1]; ++r) w.FloatArray(m.row(int(r)), size_t(m.dim));
        if (per_token_) w.EndArray();
        w.EndObject();
        buf.push_back('\n');
        out_.write(buf.data(), std::streamsize(buf.size()));
      }
    }
    for (size_t i = 1; i < first.size() && per_token_; ++i) {
      offsets_.push_back(offsets_.back() + int64_t(first[i] - first[i - 1]));
    }
    rows_ += size_t(m.rows);
    inputs_ += lines.size();
    return out_ ? Status::Ok() : Status::IoError("cannot write " + partial_);
  }

  // Finishes the file (and a per-token .npy's offsets beside it) and moves it to its name.
  Status Commit() {
    if (npy_) {
      const std::string header = NpyHeader(
          kNpyHeader, "<f4", std::to_string(rows_) + ", " + std::to_string(dim_ < 0 ? 0 : dim_));
      out_.seekp(0);
      out_.write(header.data(), std::streamsize(header.size()));
    }
    out_.close();
    if (!out_) return Status::IoError("cannot write " + partial_);
    if (npy_ && per_token_) {
      // Written and moved first: the vectors appear under their name only once both are whole.
      std::ofstream off(OffsetsPath() + ".partial", std::ios::binary | std::ios::trunc);
      const std::string header =
          NpyHeader(kNpyHeader, "<i8", std::to_string(offsets_.size()) + ",");
      off.write(header.data(), std::streamsize(header.size()));
      off.write(reinterpret_cast<const char*>(offsets_.data()),
                std::streamsize(offsets_.size() * sizeof(int64_t)));
      off.close();
      if (!off) return Status::IoError("cannot write " + OffsetsPath() + ".partial");
      ORCHID_RETURN_IF_ERROR(Rename(OffsetsPath() + ".partial", OffsetsPath()));
    }
    return Rename(partial_, path_);
  }

  void Abandon() {
    out_.close();
    std::error_code ec;
    std::filesystem::remove(partial_, ec);
    if (npy_ && per_token_) std::filesystem::remove(OffsetsPath() + ".partial", ec);
  }

  // Inputs written (the progress bar's unit).
  size_t inputs() const { return inputs_; }
  // Rows written: one per input, or per kept token.
  size_t rows() const { return rows_; }
  // OUT.npy's per-input row offsets: OUT.offsets.npy.
  std::string OffsetsPath() const {
    return (std::filesystem::path(path_).replace_extension(".offsets.npy")).string();
  }

 private:
  static constexpr size_t kNpyHeader = 128;  // room for any shape
  RowWriter() = default;
  bool npy_ = false;
  bool per_token_ = false;
  std::string path_, partial_;
  std::ofstream out_;
  int dim_ = -1;
  size_t rows_ = 0, inputs_ = 0;
  std::vector<int64_t> offsets_{0};  // per token: each input's first row, and the total
};

// Progress on stderr: a bar redrawn in place on a terminal, a log line every 10 s otherwise.
class Progress {
 public:
  Progress(size_t total, bool quiet)
      : total_(total), quiet_(quiet), tty_(isatty(STDERR_FILENO) != 0), start_(Clock::now()) {}
  void Update(size_t done, bool final = false) {
    if (quiet_) return;
    const auto now = Clock::now();
    if (!final && now - last_ < (tty_ ? std::chrono::milliseconds(200) : std::chrono::seconds(10)))
      return;
    last_ = now;
    const double s = std::chrono::duration<double>(now - start_).count();
    const double rate = s > 0 ? double(done) / s : 0;
    const double eta = rate > 0 ? double(total_ - done) / rate : 0;
    const int width = 30, filled = total_ ? int(double(width) * double(done) / double(total_)) : 0;
    if (tty_) {
      std::fprintf(stderr, "\r[%s%s] %zu/%zu  %.1f/s  ETA %.0fs ",
                   std::string(size_t(filled), '#').c_str(),
                   std::string(size_t(width - filled), '.').c_str(), done, total_, rate, eta);
      if (final) std::fputc('\n', stderr);
      std::fflush(stderr);
    } else {
      spdlog::info("embedded {}/{} ({:.1f}/s, ETA {:.0f} s)", done, total_, rate, eta);
    }
  }

 private:
  using Clock = std::chrono::steady_clock;
  size_t total_;
  bool quiet_, tty_;
  Clock::time_point start_, last_{};
};

// Counts the inputs (non-blank lines) for the progress bar.
size_t CountLines(std::istream& in) {
  std::string line;
  size_t n = 0;
  while (std::getline(in, line)) {
    if (line.find_first_not_of(" \t\r") != std::string::npos) ++n;
  }
  in.clear();
  in.seekg(0);
  return n;
}

// --input a folder: its pictures in name order as JSON Lines {"image": path, "id": name}.
Result<std::string> FolderAsLines(const std::string& dir) {
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    std::string ext = e.path().extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    if (e.is_regular_file() &&
        (ext == ".jpg" || ext == ".jpeg" || ext == ".png" || ext == ".webp" || ext == ".gif")) {
      files.push_back(e.path());
    }
  }
  if (ec) return Status::IoError("cannot list --input " + dir + ": " + ec.message());
  if (files.empty()) return Status::InvalidArgument("--input " + dir + " holds no picture");
  std::sort(files.begin(), files.end());
  std::string lines;
  for (const auto& f : files) {
    std::string line;
    JsonWriter w(&line);
    w.BeginObject();
    w.Key("image").String(f.string());
    w.Key("id").String(f.filename().string());
    w.EndObject();
    lines += line + "\n";
  }
  return lines;
}

int RunEmbed(EmbedOptions o) {
  if (o.chunk < 1 || o.in_flight < 1) {
    spdlog::error("--chunk and --in-flight must be positive");
    return 2;
  }
  if (!std::filesystem::is_directory(o.model)) {
    spdlog::error("--model {} is not a directory", o.model);
    return 2;
  }
  std::unique_ptr<std::istream> input;
  if (std::filesystem::is_directory(o.input)) {
    auto lines = FolderAsLines(o.input);
    if (!lines.ok()) {
      spdlog::error("{}", lines.status().message());
      return 2;
    }
    input = std::make_unique<std::istringstream>(std::move(lines).value());
  } else {
    input = std::make_unique<std::ifstream>(o.input);
  }
  std::istream& in = *input;
  if (!in) {
    spdlog::error("cannot read --input {}", o.input);
    return 2;
  }
  TruncationSide side = TruncationSide::kRight;
  if (o.truncation_direction == "left") side = TruncationSide::kLeft;
  // This command is the only producer and bounds itself (--chunk x --in-flight inputs).
  o.scheduler.max_queued_tokens = std::numeric_limits<int64_t>::max() / 2;
  auto serving = LoadServingModel(o.model, "", o.scheduler, nullptr);
  if (!serving.ok()) {
    spdlog::error("{}: {}", o.model, serving.status().ToString());
    return serving.status().code() == StatusCode::kInvalidArgument ? 2 : 1;
  }
  // A ColBERT model: one vector per kept token of each input.
  const bool late = serving->model.info.late_interaction.enabled;
  if (late && o.dimensions) {
    spdlog::error(
        "--dimensions: {} is a late-interaction (ColBERT) model, whose token vectors are not "
        "truncated",
        o.model);
    serving->scheduler->Shutdown();
    return 2;
  }
  auto writer = RowWriter::Open(o.output, late);
  if (!writer.ok()) {
    spdlog::error("{}", writer.status().ToString());
    serving->scheduler->Shutdown();
    return 2;
  }
  auto tokenizer = LoadModelTokenizer(o.model);
  auto prompts = ReadEncodeConfig(o.model);
  if (!tokenizer.ok() || !prompts.ok()) {
    spdlog::error("{}",
                  !tokenizer.ok() ? tokenizer.status().ToString() : prompts.status().ToString());
    serving->scheduler->Shutdown();
    (*writer)->Abandon();
    return 1;
  }
  if (serving->model.info.task != ModelTask::kEmbed) {
    spdlog::error("{} is a reranker; orchid embed needs an embedding model", o.model);
    serving->scheduler->Shutdown();
    (*writer)->Abandon();
    return 2;
  }
  const int threads = std::max(1, int(std::thread::hardware_concurrency()));
  boost::asio::thread_pool pool(size_t(std::min(threads, 4)));
  LocalBackend backend(serving->scheduler.get());
  EmbeddingService service(
      tokenizer->get(), &backend, serving->model.name,
      [&pool](Task t) { boost::asio::post(pool, std::move(t)); }, nullptr, std::min(threads, 4));
  service.SetPrompts(std::move(*prompts), o.default_prompt);
  // A static model (already loaded: its files are good) embeds a text without a token as zeros.
  const auto static_model = ReadStaticEmbedding(o.model);
  service.set_empty_text_is_zero(static_model.ok() && static_model->has_value());
  if (auto preparer = ImagePreparerFor(o.model, serving->model.info, {}); !preparer.ok()) {
    spdlog::error("{}", preparer.status().ToString());
    serving->scheduler->Shutdown();
    (*writer)->Abandon();
    return 2;
  } else if (preparer->has_value()) {
    service.SetImagePreparer(std::move(**preparer));
  }

  // Chunks in input order; each is filled by its callback and written once it is first.
  struct Chunk {
    std::vector<Line> lines;
    size_t first_index = 0;
    bool done = false;
    EmbeddingReply reply;
  };
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::shared_ptr<Chunk>> queue;  // sent, not yet written
  // The count is for the progress bar only: with --quiet the file is read once.
  Progress progress(o.quiet ? 0 : CountLines(in), o.quiet);
  simdjson::dom::parser parser;
  size_t line_number = 0, next_index = 0;
  std::string failure;
  bool more = true;

  // Writes the finished chunks at the front; waits while `wait_for_room` and the queue is full.
  auto drain = [&](bool wait_for_room, bool wait_all) -> bool {
    std::unique_lock<std::mutex> lock(mu);
    for (;;) {
      while (!queue.empty() && queue.front()->done) {
        std::shared_ptr<Chunk> c = queue.front();
        queue.pop_front();
        lock.unlock();
        if (c->reply.error) {
          const ApiError& e = *c->reply.error;
          std::string where;
          // "input[k]..." names the chunk's k-th input: report its line.
          if (e.param.rfind("input[", 0) == 0) {
            const size_t k = std::strtoull(e.param.c_str() + 6, nullptr, 10);
            if (k < c->lines.size()) {
              where = o.input + ":" + std::to_string(c->lines[k].number) + ": ";
            }
          }
          std::string message = e.message;
          if (!where.empty() && message.rfind(e.param + " ", 0) == 0) {  // the chunk's index
            message.erase(0, e.param.size() + 1);
          }
          failure = where + message;
          // The service speaks to HTTP clients; this command's switch for it is --truncate.
          if (const size_t at = failure.find("send \"truncate\": true"); at != std::string::npos) {
            failure.replace(at, std::strlen("send \"truncate\": true"), "pass --truncate");
          }
          return false;
        }
        if (Status st = (*writer)->Write(c->reply, c->lines, c->first_index); !st.ok()) {
          failure = st.ToString();
          return false;
        }
        progress.Update((*writer)->inputs());
        lock.lock();
      }
      const bool room = queue.size() < size_t(o.in_flight);
      if ((wait_all && queue.empty()) || (!wait_all && (!wait_for_room || room))) return true;
      cv.wait(lock);
    }
  };

  while (more) {
    auto chunk = std::make_shared<Chunk>();
    chunk->first_index = next_index;
    while (chunk->lines.size() < size_t(o.chunk)) {
      Line line;
      auto got = NextLine(in, o, &line_number, &parser, &line);
      if (!got.ok()) {
        failure = got.status().message();
        more = false;
        break;
      }
      if (!*got) {
        more = false;
        break;
      }
      chunk->lines.push_back(std::move(line));
    }
    if (!failure.empty() || chunk->lines.empty()) break;
    next_index += chunk->lines.size();
    EmbeddingsRequest request;
    request.texts.reserve(chunk->lines.size());
    for (size_t k = 0; k < chunk->lines.size(); ++k) {
      const Line& l = chunk->lines[k];
      if (!l.image) {
        request.texts.push_back(l.text);
      } else if (IsImageDataUri(l.text)) {
        request.images.push_back({k, l.text, false, {}});
      } else {
        std::ifstream file(l.text, std::ios::binary);
        if (!file) {
          failure = o.input + ":" + std::to_string(l.number) + ": cannot read the image " + l.text;
          break;
        }
        request.images.push_back(
            {k, {}, false, std::string(std::istreambuf_iterator<char>(file), {})});
      }
    }
    if (!failure.empty()) break;
    request.truncate = o.truncate;
    request.truncation_direction = side;
    request.dimensions = o.dimensions;
    request.prompt_name = o.prompt_name;
    request.input_type = o.input_type;
    request.per_token = late;
    request.task = o.task;
    {
      std::lock_guard<std::mutex> lock(mu);
      queue.push_back(chunk);
    }
    service.Embed(std::move(request), [chunk, &mu, &cv](EmbeddingReply reply) {
      std::lock_guard<std::mutex> lock(mu);
      chunk->reply = std::move(reply);
      chunk->done = true;
      cv.notify_all();
    });
    if (!drain(/*wait_for_room=*/true, /*wait_all=*/false)) break;
  }
  const bool ok = failure.empty() && drain(false, /*wait_all=*/true);
  if (!ok) {  // what is still in flight answers into `queue`, which must outlive it
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] {
      return std::all_of(queue.begin(), queue.end(), [](const auto& c) { return c->done; });
    });
  }
  serving->scheduler->Shutdown();
  pool.join();
  if (!ok) {
    (*writer)->Abandon();
    spdlog::error("{}", failure);
    return 1;
  }
  progress.Update((*writer)->inputs(), /*final=*/true);
  if (Status st = (*writer)->Commit(); !st.ok()) {
    spdlog::error("{}", st.ToString());
    (*writer)->Abandon();
    return 1;
  }
  if (late) {
    const bool queries = (o.prompt_name ? *o.prompt_name : o.input_type.value_or("")) == "query";
    spdlog::info("wrote {} token vectors of {} inputs (as {}) of {} to {}{}", (*writer)->rows(),
                 (*writer)->inputs(), queries ? "queries" : "documents", serving->model.name,
                 o.output,
                 o.output.ends_with(".npy") ? ", row offsets in " + (*writer)->OffsetsPath() : "");
  } else {
    spdlog::info("wrote {} embeddings of {} to {}", (*writer)->rows(), serving->model.name,
                 o.output);
  }
  return 0;
}

}  // namespace

void RegisterEmbedCommand(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<EmbedOptions>();
  auto* cmd = app.add_subcommand(
      "embed",
      "Embed a JSON Lines file offline (strings, or objects with a text field) into .npy or "
      ".jsonl, with a progress bar");
  cmd->add_option("--model", o->model, "Hugging Face model directory")->required();
  cmd->add_option("--input", o->input, "JSON Lines file: one JSON string, or object, per line")
      ->required();
  cmd->add_option("--output", o->output,
                  "OUT.npy (float32 [inputs, dim]) or OUT.jsonl ({\"index\", \"id\"?, "
                  "\"embedding\"} per line); a ColBERT model: OUT.npy float32 [vectors, dim] "
                  "and OUT.offsets.npy int64 [inputs + 1], or an array of vectors per line")
      ->required();
  cmd->add_option("--field", o->field, "the text's field in object lines")->capture_default_str();
  cmd->add_flag("--truncate", o->truncate,
                "cut inputs over the model's maximum length (else such an input fails the run)");
  cmd->add_option("--truncation-direction", o->truncation_direction, "which end --truncate cuts")
      ->capture_default_str()
      ->check(CLI::IsMember({"left", "right"}));
  cmd->add_option("--dimensions", o->dimensions,
                  "Matryoshka: keep the first N dimensions (re-normalised when the embeddings are normalised, as OpenAI; otherwise only truncated, as sentence-transformers)");
  cmd->add_option("--prompt-name", o->prompt_name,
                  "a named prompt of the model's config_sentence_transformers.json");
  cmd->add_option("--input-type", o->input_type,
                  "query or document: that prompt, if the model has one (a ColBERT model: "
                  "encode as queries, [MASK]-expanded, or as documents, the default)")
      ->check(CLI::IsMember({"query", "document"}));
  cmd->add_option("--task", o->task,
                  "the task adapter to run (jina-embeddings-v3: retrieval.query, "
                  "retrieval.passage, separation, classification, text-matching), with that "
                  "task's prompt if the model has one");
  cmd->add_option("--default-prompt", o->default_prompt,
                  "text put before every input when no --prompt-name / --input-type is given");
  cmd->add_option("--chunk", o->chunk, "inputs per request to the scheduler")
      ->capture_default_str();
  cmd->add_option("--in-flight", o->in_flight, "chunks queued at once")->capture_default_str();
  cmd->add_flag("--quiet", o->quiet, "no progress output");
  // Offline bulk work with no query to wait: arrival order in full batches unless told otherwise.
  o->scheduler.scheduling = "fcfs";
  AddSchedulerFlags(cmd, &o->scheduler);
  cmd->callback([o, exit_code] { *exit_code = RunEmbed(*o); });
}

}  // namespace orchid::cli
