// torch_spyre._C: Python bindings for the spyre device (device_*.cpp), SpyreTensorLayout and the
// DataFormats enum, named as torch-spyre's _C names them; plus the compile path's bindings.
#include "compile_bindings.h"
#include "spyre_device.h"

#include "device_options.h"

#include "spyre/isa/dl16.h"
#include "spyre/isa/error.h"

#include <torch/csrc/Exceptions.h>
#include <torch/csrc/utils/pybind.h>

namespace py = pybind11;

namespace spyre::py {
namespace {

/// Python functions that call into ATen: torch's wrapper turns c10 errors and TORCH_WARNs into
/// Python exceptions and warnings; withTorchErrors first maps our own error types.
template <typename Ret, typename... Args> auto wrap(Ret (*f)(Args...)) {
  return torch::wrap_pybind_function(
      [f](Args... args) -> Ret { return withTorchErrors([&]() -> Ret { return f(args...); }); });
}

/// The device index a Python device argument names (None: the current device); throws
/// spyre::Error for another device type or an index out of range.
int deviceArg(const ::py::object &device) {
  if (device.is_none())
    return currentDevice();
  int64_t index = 0;
  if (::py::isinstance<::py::int_>(device)) {
    index = device.cast<int64_t>();
  } else {
    auto d = device.cast<at::Device>();
    if (d.type() != at::DeviceType::PrivateUse1)
      throw Error("expected a spyre device, got " + d.str());
    index = d.has_index() ? d.index() : currentDevice();
  }
  if (index < 0 || index >= deviceCount())
    throw Error("Invalid spyre device index " + std::to_string(index) + ": " + deviceRange());
  return static_cast<int>(index);
}

sim::DeviceMemory &memoryArg(const ::py::object &device) { return deviceMemory(deviceArg(device)); }

::py::dict memoryStats(const ::py::object &device) {
  auto s = memoryArg(device).stats();
  ::py::dict out;
  out["allocated_bytes.all.current"] = s.allocated;
  out["allocated_bytes.all.peak"] = s.peak;
  out["allocation.all.allocated"] = s.numAllocs;
  out["allocation.all.freed"] = s.numFrees;
  out["allocation.all.current"] = s.live;
  out["capacity_bytes"] = s.capacity;
  return out;
}

SpyreTensorLayout layoutFromTorchDtype(std::vector<int64_t> size, at::ScalarType dtype) {
  return SpyreTensorLayout(size, deviceFormatOf(dtype));
}

::py::list toList(const std::vector<int64_t> &v) {
  ::py::list l;
  for (int64_t x : v)
    l.append(x);
  return l;
}

void bindLayout(::py::module_ &m) {
  ::py::enum_<DataFormat> df(m, "DataFormats");
#define X(name, eps, bytes) df.value(#name, DataFormat::name);
  SPYRE_DATA_FORMATS(X)
#undef X
  df.def("elems_per_stick", [](DataFormat f) { return elemsPerStick(f); },
         "Elements per 128-byte stick in this format");

  ::py::enum_<ElementArrangement>(m, "ElementArrangement")
      .value("STANDARD", ElementArrangement::STANDARD)
      .value("DL16_TO_FP32", ElementArrangement::DL16_TO_FP32)
      .value("QFP8CH", ElementArrangement::QFP8CH)
      .value("EXX2", ElementArrangement::EXX2);

  using L = SpyreTensorLayout;
  using Ea = ElementArrangement;
  using V = std::vector<int64_t>;
  ::py::class_<L>(m, "SpyreTensorLayout")
      // Overloads are tried in order; torch.dtype and DataFormats never convert into each
      // other, and a dim_order list never converts into an ElementArrangement.
      .def(::py::init([](V size, at::ScalarType dtype) {
             return withTorchErrors([&] { return layoutFromTorchDtype(size, dtype); });
           }),
           ::py::arg("size"), ::py::arg("dtype"))
      .def(::py::init([](V size, DataFormat dtype) { return L(size, dtype); }), ::py::arg("size"),
           ::py::arg("dtype"))
      .def(::py::init([](V size, V stride, at::ScalarType dtype, V dimOrder, Ea ea) {
             return withTorchErrors([&] { return L(size, stride, deviceFormatOf(dtype), dimOrder, ea); });
           }),
           ::py::arg("size"), ::py::arg("stride"), ::py::arg("dtype"), ::py::arg("dim_order"),
           ::py::arg("element_arrangement") = Ea::STANDARD)
      .def(::py::init([](V size, V stride, DataFormat dtype, V dimOrder, Ea ea) {
             return L(size, stride, dtype, dimOrder, ea);
           }),
           ::py::arg("size"), ::py::arg("stride"), ::py::arg("dtype"), ::py::arg("dim_order"),
           ::py::arg("element_arrangement") = Ea::STANDARD)
      // Expert form (torch-spyre's third constructor): device_size/stride_map as given.
      .def(::py::init([](V deviceSize, V strideMap, DataFormat dtype, Ea ea) {
             return L::fromDevice(deviceSize, strideMap, dtype, ea);
           }),
           ::py::arg("device_size"), ::py::arg("stride_map"), ::py::arg("device_dtype"),
           ::py::arg("element_arrangement") = Ea::STANDARD)
      .def("with_element_arrangement",
           [](const L &l, Ea ea) {
             return L::fromDevice(l.device_size, l.stride_map, l.device_dtype, ea);
           },
           ::py::arg("element_arrangement"), "The same layout with another element arrangement")
      .def_property_readonly("device_size", [](const L &l) { return toList(l.device_size); })
      .def_property_readonly("stride_map", [](const L &l) { return toList(l.stride_map); })
      .def_property_readonly("device_dtype", [](const L &l) { return l.device_dtype; })
      .def_property_readonly("element_arrangement",
                             [](const L &l) { return l.element_arrangement; })
      .def("elems_per_stick", &L::elemsPerStick)
      .def("device_bytes", &L::deviceBytes, "Bytes the layout occupies in DDR")
      .def("__eq__", [](const L &a, const L &b) { return a == b; }, ::py::is_operator())
      .def("__eq__", [](const L &, const ::py::object &) { return false; }, ::py::is_operator())
      .def("__hash__",
           [](const L &l) {
             return ::py::hash(::py::make_tuple(::py::tuple(toList(l.device_size)),
                                                ::py::tuple(toList(l.stride_map)),
                                                static_cast<int>(l.device_dtype),
                                                static_cast<int>(l.element_arrangement)));
           })
      .def("__str__", &L::str)
      .def("__repr__", &L::str)
      // torch-spyre's pickle format version 3: (3, device_size, stride_map, device_dtype, ea).
      .def(::py::pickle(
          [](const L &l) {
            return ::py::make_tuple(3, toList(l.device_size), toList(l.stride_map),
                                    l.device_dtype, l.element_arrangement);
          },
          [](const ::py::tuple &t) {
            if (t.size() != 5 || t[0].cast<int>() != 3)
              throw Error("SpyreTensorLayout: cannot unpickle state " +
                          ::py::repr(t).cast<std::string>() + " (expected version 3)");
            return L::fromDevice(t[1].cast<V>(), t[2].cast<V>(), t[3].cast<DataFormat>(),
                                 t[4].cast<Ea>());
          }));

  m.def("get_device_dtype", wrap(+[](at::ScalarType t) { return deviceFormatOf(t); }),
        "DataFormats a torch dtype is stored in on the device");
  m.def(
      "encode_constant",
      wrap(+[](double value, DataFormat f) -> int64_t {
        float x = static_cast<float>(value);
        switch (f) {
        case DataFormat::SEN169_FP16: return dl16::fromFloat(x);
        case DataFormat::IEEE_FP32: return dl16::floatBits(x);
        default:
          throw Unsupported("encode_constant for DataFormats." +
                            std::string(dataFormatName(f)));
        }
      }),
      ::py::arg("value"), ::py::arg("dtype"),
      "Bit pattern of a constant in a device format (DL16 bits or raw IEEE fp32 bits)");
}

void bindDevice(::py::module_ &m) {
  m.def("device_count", wrap(+[] { return deviceCount(); }));
  m.def("current_device", [] { return currentDevice(); });
  m.def("set_device", wrap(+[](::py::object d) { setDevice(deviceArg(d)); }), ::py::arg("device"));
  // The simulator runs every transfer and kernel to completion before returning.
  m.def("synchronize", wrap(+[](::py::object d) { (void)deviceArg(d); }),
        ::py::arg("device") = ::py::none());
  m.def("memory_allocated",
        wrap(+[](::py::object d) -> uint64_t {
          return memoryArg(d).stats().allocated;
        }),
        ::py::arg("device") = ::py::none());
  m.def("max_memory_allocated",
        wrap(+[](::py::object d) -> uint64_t {
          return memoryArg(d).stats().peak;
        }),
        ::py::arg("device") = ::py::none());
  m.def("reset_peak_memory_stats",
        wrap(+[](::py::object d) {
          memoryArg(d).resetPeak();
        }),
        ::py::arg("device") = ::py::none());
  m.def("memory_stats", wrap(+[](::py::object d) { return memoryStats(d); }),
        ::py::arg("device") = ::py::none());
  // torch-spyre's allocator statistics (SpyreAllocator's names).
  m.def("_spyre_get_allocator_stats", wrap(+[](::py::object d) { return memoryStats(d); }),
        ::py::arg("device"), "Allocator statistics of the device (torch.cuda.memory_stats' keys)");
  m.def("_spyre_reset_accumulated_stats",
        wrap(+[](::py::object d) {
          memoryArg(d).resetAccumulated();
        }),
        ::py::arg("device"), "Reset accumulated allocator statistics");
  m.def("_spyre_reset_peak_stats",
        wrap(+[](::py::object d) {
          memoryArg(d).resetPeak();
        }),
        ::py::arg("device"), "Reset peak allocator statistics");
  m.def("reset_accumulated_memory_stats",
        wrap(+[](::py::object d) {
          memoryArg(d).resetAccumulated();
        }),
        ::py::arg("device") = ::py::none());
  m.def("manual_seed_all", [](uint64_t seed) { manualSeed(seed); }, ::py::arg("seed"));
  m.def("initial_seed", [] { return initialSeed(); });

  m.def("empty_with_layout",
        wrap(+[](std::vector<int64_t> size, std::vector<int64_t> stride, at::ScalarType dtype,
                 const SpyreTensorLayout &layout) {
          return emptyWithLayout(size, stride, dtype, layout);
        }),
        ::py::arg("size"), ::py::arg("stride"), ::py::arg("dtype"), ::py::arg("layout"),
        "Allocate a spyre tensor whose storage is tiled by `layout`");
  m.def("get_spyre_tensor_layout",
        wrap(+[](const at::Tensor &t) { return tensorLayout(t); }), ::py::arg("tensor"));
  m.def("_device_address", wrap(+[](const at::Tensor &t) { return deviceAddress(t); }),
        ::py::arg("tensor"), "DDR address of the tensor's storage (for tests and debugging)");
  m.def("_has_default_layout",
        wrap(+[](const at::Tensor &t) {
          const StorageGeometry &g = storageGeometry(t);
          return g.layout == defaultLayout(g.sizes, g.strides, g.dtype);
        }),
        ::py::arg("tensor"),
        "Whether the tensor's storage has the layout empty_strided gives its geometry");
  m.def("_covers_storage", wrap(+[](const at::Tensor &t) { return coversStorage(t); }),
        ::py::arg("tensor"),
        "Whether the tensor is exactly the host geometry its storage is tiled for");
}

// torch-spyre's runtime state enums (values are its ABI).
enum class SpyreStreamError : int { Success = 0, Shutdown = 1 };
enum class SpyreDeviceState : int { Ok = 0, NotInitialized = 1, StreamError = 2 };

c10::Stream checkedStream(const c10::Stream &s) {
  if (s.device_type() != at::DeviceType::PrivateUse1)
    throw Error("expected a spyre stream, got a stream of " + s.device().str());
  streamPriority(s.id()); // validates the id
  return s;
}

c10::Stream spyreStream(c10::StreamId id, int device) {
  return c10::Stream(c10::Stream::UNSAFE,
                     c10::Device(at::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(device)), id);
}

/// torch-spyre's stream handle (_SpyreStreamBase), which its host_compute_stream returns: id(),
/// priority(), device(), query() and synchronize() as methods, and .stream, the torch.Stream.
struct StreamHandle {
  c10::Stream stream;
};

void bindStreamHandle(::py::module_ &m) {
  ::py::class_<StreamHandle>(m, "_SpyreStreamBase")
      .def("id", [](const StreamHandle &h) { return h.stream.id(); }, "The stream id")
      .def("priority", wrap(+[](const StreamHandle &h) { return streamPriority(h.stream.id()); }),
           "The stream priority")
      .def("device", [](const StreamHandle &h) { return h.stream.device(); }, "The stream's device")
      .def("query", [](const StreamHandle &) { return true; },
           "Whether the stream's work is complete: always, as work completes when issued")
      .def("synchronize", [](const StreamHandle &) {},
           "Waits for the stream's work: returns at once, as work completes when issued")
      .def_property_readonly("stream", [](const StreamHandle &h) { return h.stream; },
                             "The torch.Stream (usable with torch.spyre.stream)")
      .def("__eq__", [](const StreamHandle &a, const StreamHandle &b) { return a.stream == b.stream; })
      .def("__hash__", [](const StreamHandle &h) { return std::hash<c10::Stream>{}(h.stream); })
      .def("__repr__", [](const StreamHandle &h) {
        return "<torch_spyre.Stream device=" + std::to_string(h.stream.device_index()) +
               " id=" + std::to_string(h.stream.id()) + ">";
      });
  m.def("host_compute_stream",
        wrap(+[](::py::object d) { return StreamHandle{spyreStream(hostComputeStreamId(), deviceArg(d))}; }),
        ::py::arg("device") = ::py::none(),
        "The next of the device's host compute streams (round-robin over a fixed set)");
  m.def("host_compute_stream_by_id",
        wrap(+[](c10::StreamId id, ::py::object d) {
          if (!isHostComputeStreamId(id))
            throw Error("stream id " + std::to_string(id) +
                        " is not a host compute stream (host_compute_stream(device) hands them out)");
          return StreamHandle{spyreStream(id, deviceArg(d))};
        }),
        ::py::arg("id"), ::py::arg("device") = ::py::none(), "The host compute stream with this id");
}

void bindRuntime(::py::module_ &m) {
  // Lazy initialisation: the card (its DDR) comes up on first use or start_runtime().
  m.def("start_runtime", [] { withTorchErrors([] { startRuntime(); }); });
  m.def("is_initialized", [] { return runtimeStarted(); });

  ::py::enum_<SpyreStreamError>(m, "SpyreStreamError")
      .value("Success", SpyreStreamError::Success)
      .value("Shutdown", SpyreStreamError::Shutdown);
  ::py::enum_<SpyreDeviceState>(m, "SpyreDeviceState")
      .value("Ok", SpyreDeviceState::Ok)
      .value("NotInitialized", SpyreDeviceState::NotInitialized)
      .value("StreamError", SpyreDeviceState::StreamError);
  // A simulated kernel or transfer that fails raises at the call that issued it; no stream is
  // ever left in an error state.
  m.def("get_device_state", [] {
    return runtimeStarted() ? SpyreDeviceState::Ok : SpyreDeviceState::NotInitialized;
  });
  m.def("has_any_stream_error", [] { return false; });
  m.def("stream_get_error", wrap(+[](c10::Stream s) {
          checkedStream(s);
          return SpyreStreamError::Success;
        }),
        ::py::arg("stream"), "The SpyreStreamError state of one stream");
  m.def("stream_get_error_string", [](SpyreStreamError e) -> std::string {
    return e == SpyreStreamError::Success ? "Success" : "Shutdown";
  }, ::py::arg("error"));

  // Streams (device_streams.cpp): torch.Stream objects of the spyre device.
  m.def("current_stream",
        wrap(+[](::py::object d) {
          return spyreStream(currentStreamId(), deviceArg(d));
        }),
        ::py::arg("device") = ::py::none());
  m.def("default_stream",
        wrap(+[](::py::object d) {
          return spyreStream(0, deviceArg(d));
        }),
        ::py::arg("device") = ::py::none());
  m.def("set_current_stream", wrap(+[](c10::Stream s) { exchangeStreamId(checkedStream(s).id()); }),
        ::py::arg("stream"));
  m.def("get_stream_from_pool",
        wrap(+[](::py::object d, int priority) {
          return spyreStream(poolStreamId(priority), deviceArg(d));
        }),
        ::py::arg("device") = ::py::none(), ::py::arg("priority") = 0);
  m.def("_new_stream",
        wrap(+[](::py::object d, int priority) {
          return spyreStream(newStreamId(priority), deviceArg(d));
        }),
        ::py::arg("device") = ::py::none(), ::py::arg("priority") = 0);
  m.def("_stream_priority", wrap(+[](c10::Stream s) { return streamPriority(checkedStream(s).id()); }),
        ::py::arg("stream"));

  m.def("get_downcast_warning", [] { return withTorchErrors([] { return downcastWarning(); }); },
        "Whether the int64 -> int32 downcast warning is enabled");
  m.def("set_downcast_warning", [](bool on) { setDowncastWarning(on); }, ::py::arg("enabled"),
        "Enable/disable the int64 -> int32 downcast warning for this process");
  m.def("_clear_downcast_warning", [] { clearDowncastWarning(); },
        "Drop set_downcast_warning's override: TORCH_SPYRE_DOWNCAST_WARN decides again");
  m.def("get_elem_in_stick",
        wrap(+[](at::ScalarType t) { return elemsPerStick(deviceFormatOf(t)); }),
        ::py::arg("dtype"), "Elements of a torch dtype per 128-byte stick on the device");
}

} // namespace
} // namespace spyre::py

PYBIND11_MODULE(_C, m) {
  m.doc() = "spyre-jit: simulated IBM Spyre device for PyTorch";
  // Constructors and methods of SpyreTensorLayout throw spyre errors directly.
  py::register_local_exception_translator([](std::exception_ptr p) {
    try {
      if (p)
        std::rethrow_exception(p);
    } catch (const spyre::Unsupported &e) {
      PyErr_SetString(PyExc_NotImplementedError, e.what());
    } catch (const spyre::OutOfMemory &e) {
      // torch.OutOfMemoryError (a RuntimeError), as torch raises for device allocations.
      auto oom = py::module_::import("torch").attr("OutOfMemoryError");
      PyErr_SetString(oom.ptr(), e.what());
    } catch (const spyre::Error &e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
    }
  });
  spyre::py::bindLayout(m);
  spyre::py::bindDevice(m);
  spyre::py::bindRuntime(m);
  spyre::py::bindStreamHandle(m);
  spyre::py::registerCompileBindings(m);
}
