// yaml-cpp's document written as JSON (yaml_json.hpp).
#include "yaml_json.hpp"

#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>

namespace trainmem {

namespace {

constexpr int kMaxDepth = 64;
constexpr std::size_t kMaxValues = 100000;

std::string where(const YAML::Mark& mark) {
  return "line " + std::to_string(mark.line + 1) + ", column " + std::to_string(mark.column + 1);
}

struct Writer {
  std::size_t values = 0;
  std::string problem;

  nlohmann::json write(const YAML::Node& node, int depth) {
    if (!problem.empty()) return nullptr;
    if (++values > kMaxValues || depth > kMaxDepth) {
      problem = where(node.Mark()) +
                ": the document nests deeper than 64 or holds more than "
                "100,000 values.";
      return nullptr;
    }
    switch (node.Type()) {
      case YAML::NodeType::Scalar:
        return node.Scalar();
      case YAML::NodeType::Sequence: {
        nlohmann::json out = nlohmann::json::array();
        for (const YAML::Node& each : node) out.push_back(write(each, depth + 1));
        return out;
      }
      case YAML::NodeType::Map: {
        nlohmann::json out = nlohmann::json::object();
        for (const auto& pair : node) {
          if (!pair.first.IsScalar()) {
            problem = where(pair.first.Mark()) + ": a mapping's key must be a plain value.";
            return nullptr;
          }
          const std::string key = pair.first.Scalar();
          if (out.contains(key)) {
            problem = where(pair.first.Mark()) + ": the key '" + key.substr(0, 60) +
                      "' is given twice in one mapping.";
            return nullptr;
          }
          out[key] = write(pair.second, depth + 1);
        }
        return out;
      }
      default:  // null, or an empty value
        return nullptr;
    }
  }
};

}  // namespace

YamlAsJson yaml_to_json(const std::string& yaml) {
  YamlAsJson result;
  try {
    const YAML::Node root = YAML::Load(yaml);
    Writer writer;
    const nlohmann::json json = writer.write(root, 0);
    if (!writer.problem.empty()) {
      result.problem = writer.problem;
      return result;
    }
    result.json = json.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  } catch (const YAML::Exception& error) {
    result.problem = where(error.mark) + ": " + error.msg + ".";
  }
  return result;
}

}  // namespace trainmem
