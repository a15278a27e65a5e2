// Command-line parsing of generated programs: defaults, every flag, both
// value syntaxes, and the error messages for bad input.
#include "runtime/train/Options.h"

#include "TrainerTestUtil.h"

#include <initializer_list>

using namespace dtcrt;
using dtcrt_test::errorOf;

namespace {

Options parse(std::initializer_list<const char*> args, ProgramMode mode = ProgramMode::Train,
              const char* omp = nullptr) {
  std::vector<const char*> argv = {"train"};
  argv.insert(argv.end(), args.begin(), args.end());
  return parseOptions(static_cast<int>(argv.size()), argv.data(), mode, omp);
}

std::string parseError(std::initializer_list<const char*> args,
                       ProgramMode mode = ProgramMode::Train) {
  return errorOf([&] { parse(args, mode); });
}

} // namespace

TEST(TrainerOptions, Defaults) {
  Options o = parse({"--data=synthetic"});
  EXPECT_EQ(o.data, "synthetic");
  EXPECT_EQ(o.epochs, 1);
  EXPECT_EQ(o.maxSteps, 0);
  EXPECT_FALSE(o.lrSet);
  EXPECT_EQ(o.seed, 0u);
  EXPECT_TRUE(o.shuffle);
  EXPECT_EQ(o.logEvery, 50);
  EXPECT_FALSE(o.eval);
  EXPECT_FALSE(o.resume);
  EXPECT_EQ(o.threads, 1);
  EXPECT_FALSE(o.quiet);
}

TEST(TrainerOptions, AllFlags) {
  Options o = parse({"--data=/d", "--epochs=3", "--max-steps", "100", "--lr=0.05", "--seed=42",
                     "--shuffle=false", "--log-every=1", "--metrics=m.jsonl", "--eval",
                     "--save=out.onnx", "--checkpoint-dir=ck", "--resume", "--threads=4",
                     "--quiet", "--trace", "t.json"});
  EXPECT_EQ(o.data, "/d");
  EXPECT_EQ(o.epochs, 3);
  EXPECT_EQ(o.maxSteps, 100);
  EXPECT_TRUE(o.lrSet);
  EXPECT_DOUBLE_EQ(o.lr, 0.05);
  EXPECT_EQ(o.seed, 42u);
  EXPECT_TRUE(o.seedSet);
  EXPECT_FALSE(o.shuffle);
  EXPECT_EQ(o.logEvery, 1);
  EXPECT_EQ(o.metrics, "m.jsonl");
  EXPECT_TRUE(o.eval);
  EXPECT_EQ(o.save, "out.onnx");
  EXPECT_EQ(o.checkpointDir, "ck");
  EXPECT_TRUE(o.resume);
  EXPECT_EQ(o.threads, 4);
  EXPECT_TRUE(o.quiet);
  EXPECT_EQ(o.trace, "t.json");
  EXPECT_EQ(parse({"--data=synthetic", "--trace=x.json"}).trace, "x.json");
  EXPECT_TRUE(parse({"--data=synthetic"}).trace.empty());
}

TEST(TrainerOptions, ThreadsDefaultFromOmpNumThreads) {
  EXPECT_EQ(parse({"--data=synthetic"}, ProgramMode::Train, "6").threads, 6);
  EXPECT_EQ(parse({"--data=synthetic"}, ProgramMode::Train, "junk").threads, 1);
  EXPECT_EQ(parse({"--data=synthetic", "--threads=2"}, ProgramMode::Train, "6").threads, 2);
}

TEST(TrainerOptions, HelpNeedsNothingElse) {
  EXPECT_TRUE(parse({"--help"}).help);
  EXPECT_TRUE(parse({"-h"}, ProgramMode::Inference).help);
}

TEST(TrainerOptions, Errors) {
  EXPECT_EQ(parseError({"--data=synthetic", "--lr=abc"}), "--lr: expected a number, got 'abc'");
  EXPECT_EQ(parseError({"--data=synthetic", "--epochs=2x"}),
            "--epochs: expected an integer, got '2x'");
  EXPECT_EQ(parseError({"--data=synthetic", "--epochs=0"}),
            "--epochs: expected an integer >= 1, got '0'");
  EXPECT_EQ(parseError({"--data=synthetic", "--seed=-1"}),
            "--seed: expected a non-negative integer, got '-1'");
  EXPECT_EQ(parseError({"--data=synthetic", "--lr"}), "--lr: missing value");
  EXPECT_EQ(parseError({"--data=synthetic", "--lr="}), "--lr: missing value");
  EXPECT_EQ(parseError({"--data=synthetic", "--bogus=1"}), "--bogus: unknown flag (see --help)");
  EXPECT_EQ(parseError({"--data=synthetic", "--shuffle=maybe"}),
            "--shuffle: expected true or false, got 'maybe'");
  EXPECT_EQ(parseError({"--data=synthetic", "--lr=nan"}), "--lr: expected a number, got 'nan'");
  EXPECT_NE(parseError({"--data=synthetic", "stray"}).find("unexpected argument 'stray'"),
            std::string::npos);
  EXPECT_NE(parseError({}).find("--data: required"), std::string::npos);
  EXPECT_NE(parseError({"--data=synthetic", "--resume"}).find("--checkpoint-dir"),
            std::string::npos);
  EXPECT_NE(parseError({"--data=synthetic", "--input=a.pb"}).find("--input: only inference-only"),
            std::string::npos);
  EXPECT_EQ(parseError({"--data=synthetic", "--trace"}), "--trace: missing value");
  EXPECT_EQ(parseError({"--data=synthetic", "--checkpoint-every=5"}),
            "--checkpoint-every: needs --checkpoint-dir=DIR");
  EXPECT_EQ(parseError({"--data=synthetic", "--keep-checkpoints=2"}),
            "--keep-checkpoints: needs --checkpoint-dir=DIR");
  EXPECT_EQ(parseError({"--data=synthetic", "--checkpoint-dir=ck", "--keep-checkpoints=0"}),
            "--keep-checkpoints: expected an integer >= 1, got '0'");
  const Options every = parse({"--data=synthetic", "--checkpoint-dir=ck", "--checkpoint-every=5",
                               "--keep-checkpoints", "3"});
  EXPECT_EQ(every.checkpointEvery, 5);
  EXPECT_EQ(every.keepCheckpoints, 3);
  EXPECT_NE(parseError({"--input=a.pb", "--trace=t.json"}, ProgramMode::Inference)
                .find("--trace: this program is inference-only"),
            std::string::npos);
}

TEST(TrainerOptions, TokenType) {
  EXPECT_EQ(parse({"--data=t.bin"}).tokenBytes, 0);  // not given: uint16, any data
  EXPECT_EQ(parse({"--data=t.bin", "--tokens=uint16"}).tokenBytes, 2);
  EXPECT_EQ(parse({"--data=t.bin", "--tokens", "uint32"}).tokenBytes, 4);
  EXPECT_EQ(parseError({"--data=t.bin", "--tokens=int32"}),
            "--tokens: expected uint16 or uint32, got 'int32'");
  EXPECT_EQ(parseError({"--data=t.bin", "--tokens="}), "--tokens: missing value");
}

TEST(TrainerOptions, InferenceMode) {
  Options o = parse({"--input=a.pb", "--input", "b.pb", "--output-dir=out", "--threads=3"},
                    ProgramMode::Inference);
  ASSERT_EQ(o.inputs.size(), 2u);
  EXPECT_EQ(o.inputs[0], "a.pb");
  EXPECT_EQ(o.inputs[1], "b.pb");
  EXPECT_EQ(o.outputDir, "out");
  EXPECT_EQ(o.threads, 3);
  EXPECT_NE(parseError({"--input=a.pb", "--data=synthetic"}, ProgramMode::Inference)
                .find("--data: this program is inference-only"),
            std::string::npos);
  // No --input is fine here: a model may have no inputs; the count is
  // checked against the model when the program runs.
  EXPECT_TRUE(parse({}, ProgramMode::Inference).inputs.empty());
}

TEST(TrainerOptions, UsageMentionsFlags) {
  std::string u = usage("./train", ProgramMode::Train, "mnist_mlp");
  for (const char* flag : {"--data", "--epochs", "--max-steps", "--lr", "--seed", "--shuffle",
                           "--log-every", "--metrics", "--eval", "--save", "--checkpoint-dir",
                           "--resume", "--threads", "--quiet", "--help", "--trace=FILE.json",
                           "--checkpoint-every=N", "--keep-checkpoints=N", "--tokens=uint16|uint32",
                           "--data=DIR|FILE|synthetic"})
    EXPECT_NE(u.find(flag), std::string::npos) << flag;
  EXPECT_NE(usage("./f", ProgramMode::Inference, "m").find("--output-dir"), std::string::npos);
}
