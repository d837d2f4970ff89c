#include "tensorsmith/device.h"

#include <cctype>

#include "tensorsmith/errors.h"

namespace ts {

const char* device_type_name(DeviceType t) { return t == DeviceType::CPU ? "cpu" : "cuda"; }

std::string device_str(Device d) {
  if (d.type == DeviceType::CPU) return "cpu";
  return std::string(device_type_name(d.type)) + ":" + std::to_string(d.index);
}

namespace {

bool is_index(const std::string& s) {
  if (s.empty() || s.size() > 9) return false;  // 9 digits always fit an int
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

}  // namespace

Device parse_device(const std::string& s) {
  if (s == "cpu") return Device{DeviceType::CPU, 0};
  if (s == "cuda") return Device{DeviceType::CUDA, 0};
  const std::string prefix = "cuda:";
  const std::string index = s.substr(0, prefix.size()) == prefix ? s.substr(prefix.size()) : "";
  TS_CHECK(is_index(index), ValueError, "expected a device like 'cpu', 'cuda' or 'cuda:1', got '" << s << "'");
  return Device{DeviceType::CUDA, std::stoi(index)};
}

}  // namespace ts
