// Output: forwarding of the ranks' stdout and stderr to dtcrun's own, one
// whole line at a time, each prefixed `[rank R] ` (a line is written with a
// single write, so lines of different ranks never mix), and optionally to
// DIR/rank-R.log (no prefix, both streams).
//
// Lines containing a carriage return (progress bars) reach the console only
// from rank 0; there they are shown as they arrive rather than when the
// newline comes, with the prefix repeated after each \r. Should another line
// need the same stream while such a bar is open, the bar is ended with a
// newline first. A \r right before the \n (CRLF) does not make a progress line.
#pragma once

#include <string>
#include <vector>

namespace dtcrun {

enum class Stream { Out = 0, Err = 1 };

class OutputForwarder {
public:
  // `firstRank`: the global rank of local rank 0. No log files until openTee().
  OutputForwarder(int numLocalRanks, int firstRank);
  ~OutputForwarder();

  // Creates `dir` (and parents) and opens one log per rank. Returns false
  // with `error` set ("DIR/rank-3.log: Permission denied") on failure.
  bool openTee(const std::string& dir, std::string& error);

  // Bytes read from a rank's pipe.
  void data(int localRank, Stream stream, const char* bytes, size_t n);
  // The pipe reached end of file: a last line without a newline is written.
  void eof(int localRank, Stream stream);

  // A line of dtcrun's own ("dtcrun: ...") on stderr, without the newline.
  void launcherMessage(const std::string& line);

private:
  struct Pending {
    std::string line;      // the current line, not yet complete
    size_t shown = 0;      // bytes of `line` already shown live (rank 0 bars)
  };

  void completeLine(int localRank, Stream stream, const char* text, size_t n);
  void showLive(int localRank, Stream stream);
  void writeConsole(Stream stream, const std::string& text);
  void endOpenBar(Stream stream);
  std::string prefix(int localRank) const;

  int firstRank_;
  std::vector<Pending> pending_[2];  // per stream, per local rank
  std::vector<int> teeFds_;
  int barOpenBy_[2] = {-1, -1};      // local rank whose bar is mid-line, per stream
  bool consoleBroken_[2] = {false, false};
};

}  // namespace dtcrun
