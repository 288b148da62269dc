// Marks the functions that every framework op, allocation or GPU launch runs
// through.
//
// Between two ops the framework's and the interpreter's own code run and
// evict the runtime's code from the instruction cache, so in a training
// step an op pays for every cache line and page of code its path touches,
// far more than the tight loop of bench/event_cost.cc shows
// (bench/op_path_callgrind.py counts those misses inside a torch step).
// GCC places hot functions together in .text.hot: the op path then spans a
// few adjacent pages of the library's text instead of lines scattered over
// all of it, and is optimized for speed even where -O2 would not.
#pragma once

#define DEEPCONTEXT_HOT [[gnu::hot]]
