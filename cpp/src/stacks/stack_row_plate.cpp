// The first view's module's stack_row (stack_rows.hpp), linked in place of stack_row_table.cpp: it
// answers the plate's view alone, whose stack is the idealised step (check_plate_setup refuses any
// other stack by name before a row is read), so it carries that row and none of the frameworks'
// rows, their sources and their refusals: some 7 KB of the first view's bytes.
#include "stacks/stack_rows.hpp"

namespace trainmem {

const StackRow& stack_row(Stack /*stack*/) {
  static const StackRow row = ideal_stack_row();
  return row;
}

std::vector<std::string> stack_notes(const TrainingSetup& /*asked*/) { return {}; }

}  // namespace trainmem
