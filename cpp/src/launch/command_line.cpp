// A launch line's words and flags (command_line.hpp).
#include "launch/command_line.hpp"

#include <optional>

#include "model/config_text.hpp"

namespace trainmem {

Command command_of(const std::string& text, const std::string& program, bool variables) {
  Command command;
  std::string joined;
  for (std::size_t index = 0; index < text.size(); ++index) {
    if (text[index] == '\\' && index + 1 < text.size() &&
        (text[index + 1] == '\n' || text[index + 1] == '\r')) {
      ++index;
      if (text[index] == '\r' && index + 1 < text.size() && text[index + 1] == '\n') ++index;
      joined += ' ';
      continue;
    }
    joined += text[index];
  }
  // The line that runs the program: the first that names it outside a comment.
  std::size_t at = joined.find(program);
  while (at != std::string::npos) {
    const std::size_t start = joined.rfind('\n', at);
    const std::size_t first =
        joined.find_first_not_of(" \t", start == std::string::npos ? 0 : start + 1);
    const std::size_t hash = joined.find('#', first);
    if (joined[first] != '#' && (hash == std::string::npos || hash > at)) break;
    at = joined.find(program, at + 1);
  }
  if (at == std::string::npos) at = joined.size();
  const std::size_t line_start = joined.rfind('\n', at);
  const std::size_t line_end = joined.find('\n', at);
  const std::string line =
      joined.substr(line_start == std::string::npos ? 0 : line_start + 1,
                    (line_end == std::string::npos ? joined.size() : line_end) -
                        (line_start == std::string::npos ? 0 : line_start + 1));
  std::vector<std::string> words;
  std::string word;
  for (const char c : line) {
    if (c == ' ' || c == '\t' || c == '\r') {
      if (!word.empty()) words.push_back(word);
      word.clear();
    } else {
      word += c;
    }
  }
  if (!word.empty()) words.push_back(word);
  // The shell's tail (a pipe, a redirection, a comment, the next command) is not the program's;
  // a word in matching quotes is its text.
  for (std::size_t index = 0; index < words.size(); ++index) {
    const std::string& each = words[index];
    const char lead = each[0];
    if (lead == '|' || lead == '>' || lead == '<' || lead == '#' || lead == ';' || lead == '&' ||
        each.rfind("2>", 0) == 0 || each.rfind("1>", 0) == 0) {
      words.resize(index);
      break;
    }
  }
  for (std::string& each : words) {
    if (each.size() >= 2 && (each[0] == '"' || each[0] == '\'') && each.back() == each[0]) {
      each = each.substr(1, each.size() - 2);
    }
  }
  bool after = false;
  for (std::size_t index = 0; index < words.size(); ++index) {
    const std::string& each = words[index];
    if (!variables &&
        (each.find('$') != std::string::npos || each.find('`') != std::string::npos)) {
      command.problem = "The line uses the shell's variables ('" + each.substr(0, 40) +
                        "'): expand them first, as the shell would (echo the command).";
      return command;
    }
    if (!after) {
      if (each.size() >= program.size() &&
          each.compare(each.size() - program.size(), program.size(), program) == 0) {
        after = true;
        continue;
      }
      const auto value = [&](const std::string& flag) -> std::optional<long long> {
        std::string count;
        if (each.rfind(flag + "=", 0) == 0) count = each.substr(flag.size() + 1);
        if (each == flag && index + 1 < words.size()) count = words[index + 1];
        if (count.empty() || count.size() > 6 ||
            count.find_first_not_of("0123456789") != std::string::npos) {
          return std::nullopt;
        }
        return std::stoll(count);
      };
      for (const char* flag : {"--nproc_per_node", "--nproc-per-node"}) {
        if (const auto count = value(flag)) command.nproc = *count;
      }
      if (const auto count = value("--nnodes")) {
        command.nnodes = *count;
      } else if (each == "--nnodes" || each.rfind("--nnodes=", 0) == 0) {
        command.nnodes = -1;  // a range (2:4) or no number: the world is not known
      }
      continue;
    }
    command.words.push_back(each);
  }
  return command;
}

FileKeys flags_of(const std::vector<std::string>& words, const std::set<std::string>& switches,
                  const std::string& program, std::string& problem) {
  FileKeys flags;
  for (std::size_t index = 0; index < words.size(); ++index) {
    std::string word = words[index];
    if (word.rfind("--", 0) != 0) {
      problem = "'" + word.substr(0, 40) + "' stands where a flag was expected; each of " +
                program + "'s arguments is a --flag.";
      return flags;
    }
    std::string value;
    const std::size_t equals = word.find('=');
    if (equals != std::string::npos) {
      value = word.substr(equals + 1);
      word = word.substr(0, equals);
    } else if (switches.count(word) == 0 && index + 1 < words.size() &&
               words[index + 1].rfind("--", 0) != 0) {
      value = words[++index];
      // A flag of several values (--data-path 1 a 0.5 b): the rest up to the next flag.
      while (index + 1 < words.size() && words[index + 1].rfind("--", 0) != 0) {
        value += " " + words[++index];
      }
    }
    flags.push_back({word, value});
  }
  return flags;
}

const KeyDialect& command_line_dialect() {
  static const KeyDialect dialect = {
      ListRead::kInFileOrder,
      [](const std::string& name, const nlohmann::json& value) {
        const std::string& text = value.get_ref<const std::string&>();
        return name + (text.empty() ? "" : " " + text);
      },
      [](const nlohmann::json& value) {
        return "'" + value.get_ref<const std::string&>().substr(0, kMaxQuotedValueBytes) + "'";
      },
      nullptr, false};
  return dialect;
}

}  // namespace trainmem
