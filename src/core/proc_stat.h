#pragma once
// /proc/PID/stat, parsed: "pid (comm) state ppid pgrp session ... starttime ... rss ...".
#include <string>
#include <string_view>
#include <vector>

namespace gpufleet::core {

// The fields after the command name of a whole /proc/PID/stat text: index 0 is field 3 (state),
// index 19 field 22 (start time). The name may hold spaces, parentheses and newlines (a process
// chooses it with prctl(PR_SET_NAME)), so fields start after the text's last ')', and the text
// must be read whole, not as a line. Empty when there is no ')'.
std::vector<std::string> StatFieldsAfterName(std::string_view stat);

}  // namespace gpufleet::core
