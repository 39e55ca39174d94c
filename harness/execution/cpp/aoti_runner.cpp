// Runs an AOTInductor package with no Python in the process: what a C++ server deploying it would do.
//
//   aoti_runner PACKAGE DEVICE
//
// Loads PACKAGE with torch::inductor::AOTIModelPackageLoader and prints "loaded" (or "error <line>" and
// exits). Then, for each line "INPUTS OUTPUTS" read from stdin: INPUTS is a list of tensors saved by
// torch.save; they are moved to DEVICE and run; OUTPUTS receives (outputs, inputs after the call) for
// torch.load (an output the program does not return is None), and the answer is "ok" or "error <line>".
#include <torch/csrc/inductor/aoti_package/model_package_loader.h>
#include <torch/csrc/jit/serialization/pickle.h>
#include <ATen/ATen.h>

#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

namespace {

// The whole message on one line of the protocol: newlines travel as the two characters \n.
std::string one_line(const std::string& text) {
  std::string line;
  for (char c : text) {
    line += c == '\n' ? std::string("\\n") : std::string(1, c);
  }
  return line.empty() ? "(no message)" : line;
}

std::vector<char> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw std::runtime_error("cannot read " + path);
  }
  return std::vector<char>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void run_one(torch::inductor::AOTIModelPackageLoader& loader, const c10::Device& device,
             const std::string& inputs_path, const std::string& outputs_path) {
  c10::IValue saved = torch::jit::pickle_load(read_file(inputs_path));
  std::vector<at::Tensor> inputs;
  for (const c10::IValue& value : saved.toListRef()) {
    // With the strides it was given (a view's, gaps between rows included): the package was compiled for them,
    // and .to(device) would make a view with gaps contiguous.
    const at::Tensor& given = value.toTensor();
    inputs.push_back(at::empty_strided(given.sizes(), given.strides(), given.options().device(device)).copy_(given));
  }
  std::vector<at::Tensor> outputs = loader.run(inputs);
  c10::impl::GenericList outs(c10::OptionalType::create(c10::TensorType::get()));
  c10::List<at::Tensor> ins;
  for (const at::Tensor& t : outputs) {
    outs.push_back(t.defined() ? c10::IValue(t.cpu()) : c10::IValue());  // None: a program returning nothing
  }
  for (const at::Tensor& t : inputs) {
    ins.push_back(t.cpu());
  }
  std::vector<char> bytes = torch::jit::pickle_save(c10::ivalue::Tuple::create({outs, ins}));
  std::ofstream out(outputs_path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) {
    throw std::runtime_error("cannot write " + outputs_path);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: aoti_runner PACKAGE DEVICE" << std::endl;
    return 2;
  }
  std::unique_ptr<torch::inductor::AOTIModelPackageLoader> loader;
  c10::Device device(argv[2]);
  try {
    loader = std::make_unique<torch::inductor::AOTIModelPackageLoader>(argv[1]);
  } catch (const std::exception& e) {
    std::cout << "error " << one_line(e.what()) << std::endl;
    return 1;
  }
  std::cout << "loaded" << std::endl;
  std::string inputs_path;
  std::string outputs_path;
  while (std::cin >> inputs_path >> outputs_path) {
    try {
      run_one(*loader, device, inputs_path, outputs_path);
      std::cout << "ok" << std::endl;
    } catch (const std::exception& e) {
      std::cout << "error " << one_line(e.what()) << std::endl;
    }
  }
  return 0;
}
