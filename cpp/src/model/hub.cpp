// The presets by their hub repositories (hub.hpp). Each repository listed holds the preset's shape
// field for field: its config.json has the same layers, widths, heads, vocabulary and tying as the
// preset's source (an instruct or chat model is its base's post-training, the same shape). Where a
// later release changed the shape under the same family name it is not listed: Mistral-7B v0.3
// (a 32,768-token vocabulary), DeepSeek-V3.2 (its sparse-attention indexer).
#include "trainmem/hub.hpp"

#include <algorithm>
#include <cctype>
#include <utility>
#include <vector>

namespace trainmem {

namespace {

struct HubRepositories {
  const char* preset;
  std::vector<const char*> repositories;
};

const std::vector<HubRepositories>& hub_repositories() {
  static const std::vector<HubRepositories> table = {
      // Llama 3 and 3.1 (Meta renamed the 3.1 repositories from Meta-Llama-3.1-* to Llama-3.1-*;
      // both names resolve). 405B was released as Llama 3.1's: the paper's shape, 128K positions.
      {"llama3-8b", {"meta-llama/Meta-Llama-3-8B", "meta-llama/Meta-Llama-3-8B-Instruct"}},
      {"llama3-70b", {"meta-llama/Meta-Llama-3-70B", "meta-llama/Meta-Llama-3-70B-Instruct"}},
      {"llama3-405b",
       {"meta-llama/Llama-3.1-405B", "meta-llama/Llama-3.1-405B-Instruct",
        "meta-llama/Meta-Llama-3.1-405B", "meta-llama/Meta-Llama-3.1-405B-Instruct"}},
      {"llama3.1-8b",
       {"meta-llama/Llama-3.1-8B", "meta-llama/Llama-3.1-8B-Instruct",
        "meta-llama/Meta-Llama-3.1-8B", "meta-llama/Meta-Llama-3.1-8B-Instruct"}},
      {"llama3.1-70b",
       {"meta-llama/Llama-3.1-70B", "meta-llama/Llama-3.1-70B-Instruct",
        "meta-llama/Meta-Llama-3.1-70B", "meta-llama/Meta-Llama-3.1-70B-Instruct"}},
      {"llama3.3-70b", {"meta-llama/Llama-3.3-70B-Instruct"}},
      {"llama3.2-1b", {"meta-llama/Llama-3.2-1B", "meta-llama/Llama-3.2-1B-Instruct"}},
      {"llama3.2-3b", {"meta-llama/Llama-3.2-3B", "meta-llama/Llama-3.2-3B-Instruct"}},
      {"llama4-scout",
       {"meta-llama/Llama-4-Scout-17B-16E", "meta-llama/Llama-4-Scout-17B-16E-Instruct"}},
      {"llama4-maverick",
       {"meta-llama/Llama-4-Maverick-17B-128E", "meta-llama/Llama-4-Maverick-17B-128E-Instruct"}},
      {"llama2-7b", {"meta-llama/Llama-2-7b-hf", "meta-llama/Llama-2-7b-chat-hf"}},
      {"llama2-13b", {"meta-llama/Llama-2-13b-hf", "meta-llama/Llama-2-13b-chat-hf"}},
      {"llama2-70b", {"meta-llama/Llama-2-70b-hf", "meta-llama/Llama-2-70b-chat-hf"}},
      // Qwen3: the post-trained model under the bare name, the base with -Base.
      {"qwen3-0.6b", {"Qwen/Qwen3-0.6B", "Qwen/Qwen3-0.6B-Base"}},
      {"qwen3-1.7b", {"Qwen/Qwen3-1.7B", "Qwen/Qwen3-1.7B-Base"}},
      {"qwen3-4b", {"Qwen/Qwen3-4B", "Qwen/Qwen3-4B-Base"}},
      {"qwen3-8b", {"Qwen/Qwen3-8B", "Qwen/Qwen3-8B-Base"}},
      {"qwen3-14b", {"Qwen/Qwen3-14B", "Qwen/Qwen3-14B-Base"}},
      {"qwen3-32b", {"Qwen/Qwen3-32B"}},
      {"qwen3-30b-a3b",
       {"Qwen/Qwen3-30B-A3B", "Qwen/Qwen3-30B-A3B-Base", "Qwen/Qwen3-30B-A3B-Instruct-2507",
        "Qwen/Qwen3-30B-A3B-Thinking-2507"}},
      {"qwen3-235b-a22b",
       {"Qwen/Qwen3-235B-A22B", "Qwen/Qwen3-235B-A22B-Instruct-2507",
        "Qwen/Qwen3-235B-A22B-Thinking-2507"}},
      // Qwen3-Next: the Instruct and Thinking releases share the shape (their model cards).
      {"qwen3-next-80b-a3b",
       {"Qwen/Qwen3-Next-80B-A3B-Instruct", "Qwen/Qwen3-Next-80B-A3B-Thinking"}},
      // Qwen3.6's 27B and 35B-A3B: Qwen3.5's architecture, their checkpoints' safetensors totals
      // Qwen3.5's to the parameter (27,781,427,952 and 35,951,822,704).
      {"qwen3.5-27b", {"Qwen/Qwen3.5-27B", "Qwen/Qwen3.6-27B"}},
      {"qwen3.5-35b-a3b", {"Qwen/Qwen3.5-35B-A3B", "Qwen/Qwen3.6-35B-A3B"}},
      {"qwen3.5-122b-a10b", {"Qwen/Qwen3.5-122B-A10B"}},
      {"qwen3.5-397b-a17b", {"Qwen/Qwen3.5-397B-A17B"}},
      {"qwen2.5-7b", {"Qwen/Qwen2.5-7B", "Qwen/Qwen2.5-7B-Instruct"}},
      {"qwen2.5-72b", {"Qwen/Qwen2.5-72B", "Qwen/Qwen2.5-72B-Instruct"}},
      {"deepseek-v3",
       {"deepseek-ai/DeepSeek-V3", "deepseek-ai/DeepSeek-V3-Base", "deepseek-ai/DeepSeek-V3-0324",
        "deepseek-ai/DeepSeek-R1", "deepseek-ai/DeepSeek-R1-0528"}},
      {"deepseek-v2-lite", {"deepseek-ai/DeepSeek-V2-Lite", "deepseek-ai/DeepSeek-V2-Lite-Chat"}},
      // DeepSeek-V3.2's releases: V3.2-Exp, V3.2 and V3.2-Speciale list the same safetensors total,
      // 685,396,921,376 (with the MTP module, its copies of the embedding and head, FP8 scales).
      {"deepseek-v3.2",
       {"deepseek-ai/DeepSeek-V3.2", "deepseek-ai/DeepSeek-V3.2-Exp",
        "deepseek-ai/DeepSeek-V3.2-Speciale"}},
      {"kimi-k2",
       {"moonshotai/Kimi-K2-Instruct", "moonshotai/Kimi-K2-Base",
        "moonshotai/Kimi-K2-Instruct-0905"}},
      {"nemotron3-nano-30b-a3b",
       {"nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16",
        "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-Base-BF16"}},
      {"nemotron-nano-9b-v2",
       {"nvidia/NVIDIA-Nemotron-Nano-9B-v2", "nvidia/NVIDIA-Nemotron-Nano-9B-v2-Base"}},
      {"nemotron3-super-120b-a12b",
       {"nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-BF16",
        "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-Base-BF16"}},
      {"kimi-linear-48b-a3b",
       {"moonshotai/Kimi-Linear-48B-A3B-Instruct", "moonshotai/Kimi-Linear-48B-A3B-Base"}},
      {"glm4.5", {"zai-org/GLM-4.5", "zai-org/GLM-4.5-Base"}},
      {"glm4.5-air", {"zai-org/GLM-4.5-Air", "zai-org/GLM-4.5-Air-Base"}},
      // GLM-5.1: GLM-5's architecture, its BF16 total GLM-5's to the parameter (753,864,139,008).
      {"glm-5", {"zai-org/GLM-5", "zai-org/GLM-5.1"}},
      {"gemma3-1b", {"google/gemma-3-1b-pt", "google/gemma-3-1b-it"}},
      {"gemma3-4b", {"google/gemma-3-4b-pt", "google/gemma-3-4b-it"}},
      {"gemma3-12b", {"google/gemma-3-12b-pt", "google/gemma-3-12b-it"}},
      {"gemma3-27b", {"google/gemma-3-27b-pt", "google/gemma-3-27b-it"}},
      {"gemma2-9b", {"google/gemma-2-9b", "google/gemma-2-9b-it"}},
      {"gemma4-31b", {"google/gemma-4-31B", "google/gemma-4-31B-it"}},
      {"gemma4-26b-a4b", {"google/gemma-4-26B-A4B", "google/gemma-4-26B-A4B-it"}},
      {"lfm2-350m", {"LiquidAI/LFM2-350M"}},
      {"lfm2-700m", {"LiquidAI/LFM2-700M"}},
      {"lfm2-1.2b", {"LiquidAI/LFM2-1.2B"}},
      {"lfm2-8b-a1b", {"LiquidAI/LFM2-8B-A1B"}},
      {"ling-lite", {"inclusionAI/Ling-lite", "inclusionAI/Ling-lite-base"}},
      {"ling-mini-2.0", {"inclusionAI/Ling-mini-2.0", "inclusionAI/Ling-mini-base-2.0"}},
      {"mistral-7b", {"mistralai/Mistral-7B-v0.1", "mistralai/Mistral-7B-Instruct-v0.1"}},
      {"mixtral-8x7b", {"mistralai/Mixtral-8x7B-v0.1", "mistralai/Mixtral-8x7B-Instruct-v0.1"}},
      {"gpt-oss-20b", {"openai/gpt-oss-20b"}},
      {"gpt-oss-120b", {"openai/gpt-oss-120b"}},
      // GPT-2's repositories were first published without an owner ("gpt2"), since moved.
      {"gpt2", {"openai-community/gpt2"}},
      {"gpt2-medium", {"openai-community/gpt2-medium"}},
      {"gpt2-large", {"openai-community/gpt2-large"}},
      {"gpt2-xl", {"openai-community/gpt2-xl"}},
      {"phi-4", {"microsoft/phi-4"}},
      {"olmo2-7b",
       {"allenai/OLMo-2-1124-7B", "allenai/OLMo-2-1124-7B-SFT", "allenai/OLMo-2-1124-7B-DPO",
        "allenai/OLMo-2-1124-7B-Instruct"}},
      {"olmo2-13b",
       {"allenai/OLMo-2-1124-13B", "allenai/OLMo-2-1124-13B-SFT", "allenai/OLMo-2-1124-13B-DPO",
        "allenai/OLMo-2-1124-13B-Instruct"}},
      {"olmo2-32b",
       {"allenai/OLMo-2-0325-32B", "allenai/OLMo-2-0325-32B-SFT", "allenai/OLMo-2-0325-32B-DPO",
        "allenai/OLMo-2-0325-32B-Instruct"}},
      {"pythia-160m", {"EleutherAI/pythia-160m", "EleutherAI/pythia-160m-deduped"}},
  };
  return table;
}

std::string lower(std::string_view text) {
  std::string lowered(text);
  for (char& c : lowered) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lowered;
}

std::string name_of(const std::string& id) { return id.substr(id.rfind('/') + 1); }

}  // namespace

HubMatch preset_for_hub_id(std::string_view id) {
  // A local path or a URL to the repository is not an id: "./Meta-Llama-3-8B" is read by name.
  const std::string wanted = lower(id);
  HubMatch by_name;
  for (const HubRepositories& each : hub_repositories()) {
    for (const char* repository : each.repositories) {
      const std::string listed = lower(repository);
      if (listed == wanted) return {find_preset(each.preset), repository, false};
      if (by_name.preset == nullptr && !wanted.empty() && name_of(listed) == name_of(wanted)) {
        by_name = {find_preset(each.preset), repository, true};
      }
    }
  }
  return by_name;
}

}  // namespace trainmem
