// The plan's arguments and argument counts (plan.h), built once at load.

#include "backend/execute/plan.h"

namespace etrt::backend {

executorch::aten::ScalarType scalar_type_of(engine::DataType t) {
  using executorch::aten::ScalarType;
  switch (t) {
    case engine::DataType::kFloat32:
      return ScalarType::Float;
    case engine::DataType::kFloat16:
      return ScalarType::Half;
    case engine::DataType::kBFloat16:
      return ScalarType::BFloat16;
    case engine::DataType::kInt8:
      return ScalarType::Char;
    case engine::DataType::kUInt8:
      return ScalarType::Byte;
    case engine::DataType::kInt32:
      return ScalarType::Int;
    case engine::DataType::kInt64:
      return ScalarType::Long;
    case engine::DataType::kBool:
      return ScalarType::Bool;
  }
  return ScalarType::Undefined;
}

namespace {

Argument argument_of(const IoSlot& slot) {
  Argument b;
  b.engine_index = slot.engine_index;
  b.dtype = slot.dtype;
  b.scalar_type = scalar_type_of(slot.dtype);
  b.display_name = slot.display_name;
  return b;
}

}  // namespace

void plan_arguments(const std::vector<IoSlot>& inputs, const std::vector<IoSlot>& outputs, Plan* plan) {
  plan->arguments.clear();
  plan->arguments.reserve(inputs.size() + outputs.size());
  for (const IoSlot& slot : inputs) {
    Argument b = argument_of(slot);
    b.in_place_target = slot.alias_target;
    plan->arguments.push_back(std::move(b));
  }
  for (const IoSlot& slot : outputs) {
    Argument b = argument_of(slot);
    if (slot.alias_of >= 0) {
      b.kind = ArgumentKind::kAlias;
      b.target = slot.alias_of;
    }
    plan->arguments.push_back(std::move(b));
  }
  plan->arity.inputs = inputs.size();
  plan->arity.outputs = outputs.size();
  plan->arity.bound = plan->arguments.size();
}

void plan_state(size_t k, Plan* plan) {
  const OwnedState& state = plan->states[k];
  Argument& in = plan->arguments[static_cast<size_t>(state.input)];
  in.kind = ArgumentKind::kState;
  in.target = static_cast<int32_t>(k);
  if (state.in_place) return;
  Argument& out = plan->arguments[plan->arity.inputs + static_cast<size_t>(state.output)];
  out.kind = ArgumentKind::kState;
  out.target = static_cast<int32_t>(k);
  plan->writes_back_state = true;
}

void count_arguments(Plan* plan) {
  Arity& a = plan->arity;
  a.passed = a.optional = a.aliased = 0;
  for (Argument& b : plan->arguments) {
    b.optional =
        b.kind == ArgumentKind::kAlias && plan->arguments[static_cast<size_t>(b.target)].kind == ArgumentKind::kCaller;
    a.aliased += b.kind == ArgumentKind::kAlias;
    a.optional += b.optional;
    a.passed += b.passed(/*with_aliased=*/true);
  }
}

}  // namespace etrt::backend
