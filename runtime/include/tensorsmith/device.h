// Devices. CUDA is declared from the start so dispatch tables have a device
// dimension; the CUDA backend fills it (see dispatch.h).
#pragma once

#include <cstdint>
#include <string>

namespace ts {

enum class DeviceType : uint8_t { CPU, CUDA };
constexpr int kNumDeviceTypes = 2;

struct Device {
  DeviceType type = DeviceType::CPU;
  int index = 0;
  bool operator==(const Device& o) const { return type == o.type && index == o.index; }
  bool operator!=(const Device& o) const { return !(*this == o); }
};

const char* device_type_name(DeviceType t);  // "cpu", "cuda"
std::string device_str(Device d);             // "cpu", "cuda:0"
Device parse_device(const std::string& s);    // "cpu", "cuda", "cuda:1"; throws ValueError

}  // namespace ts
