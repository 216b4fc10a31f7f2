#pragma once
// Small text helpers for the hand-written parsers of CSV and key = value files.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace gpufleet::core {

// `text` cut at every `sep` (n separators give n + 1 pieces, empty ones kept).
std::vector<std::string_view> SplitText(std::string_view text, char sep);
// `text` without leading and trailing spaces, tabs and carriage returns.
std::string_view TrimText(std::string_view text);
// Where the first byte above 0x7f in `text` is, as "LINE:COLUMN" (both from 1), or "" when
// `text` is plain ASCII. The TOML files are read as ASCII only: Debian 12's toml++ 3.3 reaches
// __builtin_unreachable() on some non-ASCII input (marzer/tomlplusplus#190, #295).
std::string FirstNonAsciiPosition(std::string_view text);

// `text` cut to at most `max_bytes` bytes, never inside a UTF-8 character (a cut text ends with
// "..." within the limit), for messages that quote what a user gave.
std::string TruncateUtf8(std::string_view text, std::size_t max_bytes);

// `text` with &, <, >, " and ' as character references: safe inside HTML or XML text and
// quoted attribute values.
std::string HtmlEscape(std::string_view text);

// `text` safe to print on a terminal or in a log line: C0 and C1 control characters as \xNN and
// bidirectional formatting characters (which reorder what is shown around them) as \uNNNN;
// other UTF-8 unchanged. For text that came from outside (job names, what a node reports).
std::string Printable(std::string_view text);
// As Printable, but line feeds, tabs and carriage returns stay: a program's output (a job's log)
// shown on a terminal keeps its lines and progress bars, and loses the escape sequences that
// could rewrite the screen, set the clipboard (OSC 52) or reorder text.
std::string PrintableOutput(std::string_view text);
// How many of `text`'s first bytes end on a whole UTF-8 character: all of them unless it ends
// inside a multi-byte one (then up to its first byte), so a text read in pieces is escaped whole.
std::size_t WholeUtf8Prefix(std::string_view text);

// Whether `host` (a name or an address, IPv6 without brackets) can only be this machine:
// "localhost", "::1", or a dotted 127.x address ("127.0.0.1.example.com" is not).
bool IsLoopbackHost(std::string_view host);

}  // namespace gpufleet::core
