/*
 * DLMonitor: the stable C ABI between deep-learning frameworks and tools.
 *
 * DLMonitor sits in the profiled process. Framework adapters (the PyTorch
 * RecordFunction adapter, later JAX and GPU runtimes) *emit* events through
 * dlmonitor_event_emit(); tools *register* callbacks per domain and receive
 * those events together with the unified calling context of the thread that
 * caused them: thread -> Python frames -> framework operators (with forward /
 * backward phases) -> whatever a tool adds below (GPU APIs, kernels).
 *
 * Calling contexts are nodes of one process-wide tree, named by dense integer
 * ids (dlmonitor_context_t) that stay valid until the process exits. A tool
 * can therefore aggregate metrics per context id online and resolve the
 * frames of the contexts it kept only when it writes its results.
 *
 * Rules of this header:
 *  - It depends on <stddef.h> and <stdint.h> only and is valid C99 and C++.
 *  - Every struct starts with `struct_size`; producers set it to
 *    sizeof(struct), consumers must check it before reading fields added in
 *    later minor versions. Fields are only ever appended.
 *  - Enum values are never renumbered.
 *  - Strings passed INTO callbacks are valid only during the callback;
 *    strings returned BY dlmonitor (frame names, files) stay valid until the
 *    process exits.
 *  - Nothing here throws, allocates on behalf of the caller or needs the
 *    Python GIL. Callbacks must not throw either.
 */
#ifndef DEEPCONTEXT_DLMONITOR_H_
#define DEEPCONTEXT_DLMONITOR_H_

#include <stddef.h>
#include <stdint.h>

#if defined(DLMONITOR_BUILDING_LIBRARY)
#define DLMONITOR_API __attribute__((visibility("default")))
#else
#define DLMONITOR_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Major version changes break the ABI; minor versions only append. */
#define DLMONITOR_VERSION_MAJOR 1
#define DLMONITOR_VERSION_MINOR 5

typedef enum dlmonitor_status {
  DLMONITOR_OK = 0,
  DLMONITOR_ERROR_INVALID_ARGUMENT = 1,
  DLMONITOR_ERROR_NOT_INITIALIZED = 2,
  DLMONITOR_ERROR_LIMIT_REACHED = 3, /* e.g. too many callbacks */
  DLMONITOR_ERROR_NOT_FOUND = 4,
  DLMONITOR_ERROR_BUFFER_TOO_SMALL = 5
} dlmonitor_status_t;

/* What kind of event a callback subscribes to. */
typedef enum dlmonitor_domain {
  DLMONITOR_DOMAIN_FRAMEWORK_OP = 0, /* operator / backward function / scope */
  DLMONITOR_DOMAIN_GPU_API = 1,      /* GPU runtime or driver API call */
  DLMONITOR_DOMAIN_MEMORY = 2,       /* framework allocator events */
  DLMONITOR_DOMAIN_COUNT = 3
} dlmonitor_domain_t;

typedef enum dlmonitor_phase {
  DLMONITOR_PHASE_ENTER = 0,
  DLMONITOR_PHASE_EXIT = 1,
  DLMONITOR_PHASE_INSTANT = 2 /* events without duration (memory) */
} dlmonitor_phase_t;

typedef enum dlmonitor_framework {
  DLMONITOR_FRAMEWORK_UNKNOWN = 0,
  DLMONITOR_FRAMEWORK_PYTORCH = 1,
  DLMONITOR_FRAMEWORK_JAX = 2
} dlmonitor_framework_t;

typedef enum dlmonitor_op_kind {
  DLMONITOR_OP_OPERATOR = 0,          /* aten::linear, ... */
  DLMONITOR_OP_BACKWARD_FUNCTION = 1, /* AddmmBackward0, ... */
  DLMONITOR_OP_USER_SCOPE = 2,        /* torch.profiler.record_function(...) */
  /* An engine frame that runs exactly one backward function (PyTorch's
     "autograd::engine::evaluate_function: X"). It is not a node of its own:
     its time is charged to the [backward] phase node under which its
     backward function is placed, so engine overhead stays visible without
     an extra level in every backward path. */
  DLMONITOR_OP_BACKWARD_WRAPPER = 3
} dlmonitor_op_kind_t;

/* Frame kinds of calling-context nodes (same numbering as the .dctx file). */
typedef enum dlmonitor_frame_kind {
  DLMONITOR_FRAME_ROOT = 0,
  DLMONITOR_FRAME_THREAD = 1,
  DLMONITOR_FRAME_PYTHON = 2,
  DLMONITOR_FRAME_OPERATOR = 3,
  DLMONITOR_FRAME_PHASE = 4, /* "[forward]" / "[backward]" */
  DLMONITOR_FRAME_USER_SCOPE = 5,
  DLMONITOR_FRAME_NATIVE = 6,
  DLMONITOR_FRAME_GPU_API = 7,
  DLMONITOR_FRAME_GPU_KERNEL = 8,
  DLMONITOR_FRAME_GPU_MEMCPY = 9,
  DLMONITOR_FRAME_GPU_MEMSET = 10,
  DLMONITOR_FRAME_GPU_SYNC = 11,
  /* 12 is the .dctx "process" kind, used only offline. */
  DLMONITOR_FRAME_GPU_INSTRUCTION = 13 /* "pc 0x1a0" under a GPU kernel */
} dlmonitor_frame_kind_t;

/* A calling context: a node of the process-wide context tree. 0 = none. */
typedef uint64_t dlmonitor_context_t;

/* DLMONITOR_DOMAIN_FRAMEWORK_OP payload. */
typedef struct dlmonitor_op_data {
  size_t struct_size;
  dlmonitor_framework_t framework;
  dlmonitor_op_kind_t kind;
  const char* name;        /* operator / function / scope name */
  uint64_t op_id;          /* pairs ENTER with EXIT; unique among live ops.
                              An EXIT is looked for among the ops open on
                              its own thread: an op that may end on another
                              thread needs an id that no op left open there
                              can have. */
  /* sequence_number and forward_thread_id are read at ENTER only: an EXIT
     may carry -1 and 0. */
  int64_t sequence_number; /* autograd sequence number; -1 when none */
  uint64_t thread_id;      /* framework's logical id of the thread that
                              started the op. Since 1.5 an EXIT on another
                              thread closes the op on that one (at its next
                              event there); with 0 such an EXIT is dropped. */
  uint64_t forward_thread_id; /* backward functions: id of the thread that
                                 ran the forward op; otherwise 0 */
} dlmonitor_op_data_t;

/* DLMONITOR_DOMAIN_GPU_API payload. */
typedef struct dlmonitor_gpu_api_data {
  size_t struct_size;
  const char* name;        /* "cuLaunchKernel", ... */
  uint64_t correlation_id; /* vendor correlation id of the call */
} dlmonitor_gpu_api_data_t;

/* Bits of dlmonitor_memory_data_t.flags. */
typedef enum dlmonitor_memory_flag {
  /* A block that was already allocated when the producer began reporting
     (a snapshot of the allocator at the start of profiling). Its context is
     the "[allocated before profiling]" node under the calling thread's
     current context; a block the tools already know (same device and
     address) is not counted twice. */
  DLMONITOR_MEMORY_PREEXISTING = 1,
  /* Memory the allocator reserves from (bytes > 0) or returns to (bytes < 0)
     the device, e.g. a caching allocator's segments: reserved, not handed
     to the program, so it is not a block. Context 0. */
  DLMONITOR_MEMORY_RESERVED = 2
} dlmonitor_memory_flag_t;

/* DLMONITOR_DOMAIN_MEMORY payload (phase INSTANT). */
typedef struct dlmonitor_memory_data {
  size_t struct_size;
  int32_t device;      /* -1 = host */
  const void* address;
  int64_t bytes;       /* > 0 allocation, < 0 free */
  int64_t total_allocated; /* framework's live bytes after this event;
                              0 when the framework does not say */
  uint32_t flags;          /* dlmonitor_memory_flag_t bits; read only when
                              struct_size covers it (older producers: 0) */
} dlmonitor_memory_data_t;

/* The flags of a memory event; 0 from producers built before the field. */
static inline uint32_t dlmonitor_memory_flags(
    const dlmonitor_memory_data_t* memory) {
  return memory->struct_size >= offsetof(dlmonitor_memory_data_t, flags) +
                                    sizeof(memory->flags)
             ? memory->flags
             : 0;
}

typedef struct dlmonitor_event {
  size_t struct_size;
  dlmonitor_domain_t domain;
  dlmonitor_phase_t phase;
  /* Exactly one member is set, chosen by domain. */
  const dlmonitor_op_data_t* op;
  const dlmonitor_gpu_api_data_t* gpu_api;
  const dlmonitor_memory_data_t* memory;
  /* Filled by DLMonitor before callbacks run: the context of this event
     (for an op: the node of the op itself; for GPU API events and
     allocations: the calling thread's current context; for frees (bytes < 0)
     0, as a free belongs to the allocation at its address). Producers leave
     it 0. */
  dlmonitor_context_t context;
} dlmonitor_event_t;

/* Called on the thread that caused the event, without the Python GIL. */
typedef void (*dlmonitor_callback_t)(const dlmonitor_event_t* event,
                                     void* user_data);

typedef struct dlmonitor_callback_registration* dlmonitor_callback_handle_t;

/* One frame of a calling context. */
typedef struct dlmonitor_frame {
  size_t struct_size;
  dlmonitor_frame_kind_t kind;
  const char* name; /* function, operator, phase or thread name */
  const char* file; /* "" when unknown */
  uint32_t line;    /* 0 when unknown */
} dlmonitor_frame_t;

/* ---- lifetime -------------------------------------------------------- */

/* Initializes DLMonitor (reference counted; every successful call must be
   paired with dlmonitor_finalize). Detects the Python interpreter, if any. */
DLMONITOR_API dlmonitor_status_t dlmonitor_init(void);
/* Drops one reference; callbacks registered by the caller should be
   unregistered first. Contexts stay valid. */
DLMONITOR_API dlmonitor_status_t dlmonitor_finalize(void);
/* "1.0 (python 3.12.1)" style description of the running configuration. */
DLMONITOR_API const char* dlmonitor_describe(void);

/* ---- tools: callbacks ------------------------------------------------ */

/* Registers `callback` for `domain`. Callbacks of a domain run in
   registration order. At most 16 per domain. */
DLMONITOR_API dlmonitor_status_t dlmonitor_callback_register(
    dlmonitor_domain_t domain, dlmonitor_callback_t callback, void* user_data,
    dlmonitor_callback_handle_t* handle);
/* After this returns the callback is not started again; a call already
   running on another thread may still finish. */
DLMONITOR_API dlmonitor_status_t dlmonitor_callback_unregister(
    dlmonitor_callback_handle_t handle);

/* ---- tools: calling contexts ----------------------------------------- */

/* The calling thread's current unified context (thread, Python frames,
   innermost active framework op). Cheap: the unchanged prefix of the call
   path is cached per thread. */
DLMONITOR_API dlmonitor_status_t dlmonitor_context_current(
    dlmonitor_context_t* context);
/* The child of `parent` for `frame`, created on first use. Lets tools hang
   their own nodes (GPU APIs, kernels) under a context. A frame kind that
   dlmonitor_frame_kind_t does not name is refused (since 1.4:
   DLMONITOR_ERROR_INVALID_ARGUMENT). [any thread] */
DLMONITOR_API dlmonitor_status_t dlmonitor_context_child(
    dlmonitor_context_t parent, const dlmonitor_frame_t* frame,
    dlmonitor_context_t* child);
/* The frame of `context` and its parent (0 for the root). */
DLMONITOR_API dlmonitor_status_t dlmonitor_context_frame(
    dlmonitor_context_t context, dlmonitor_frame_t* frame,
    dlmonitor_context_t* parent);
/* Number of contexts created so far; ids are 1..count (1 = root). */
DLMONITOR_API uint64_t dlmonitor_context_count(void);
/* Writes the frames of `context`, root first, into frames[0..capacity).
   *count receives the path length; BUFFER_TOO_SMALL if it exceeds capacity
   (the first `capacity` frames are still written). */
DLMONITOR_API dlmonitor_status_t dlmonitor_callpath_get(
    dlmonitor_context_t context, dlmonitor_frame_t* frames, size_t capacity,
    size_t* count);

/* ---- producers (framework adapters) ---------------------------------- */

/* Python frames whose file path contains `substring` are left out when they
   are the innermost frames of a captured path. Adapters use it to hide their
   framework's own glue between the user's line and the op (for PyTorch:
   record_function.__enter__, torch/_ops.py). */
DLMONITOR_API dlmonitor_status_t dlmonitor_python_hide_leaf_files(
    const char* substring);

/* Like dlmonitor_python_hide_leaf_files, for the frames of one function
   (qualified name or its last component; NULL or "" = any) in files whose
   path contains `file_substring` (since 1.3): code generated with exec()
   shares the file "<string>" with `python -c` programs. */
DLMONITOR_API dlmonitor_status_t dlmonitor_python_hide_leaf_frames(
    const char* file_substring, const char* function);

/* Python frames whose file path contains `file_substring` and whose function
   is `function` (qualified name or its last component; NULL or "" = any)
   are compilation work (since 1.3): a path through such a frame hangs from
   a "[compile]" phase node inserted before the first of them (at the leaf
   when that frame is hidden), once per path. Adapters use it for JIT
   compilers that run inside a call (torch.compile's tracing, code
   generation and autotuning). */
DLMONITOR_API dlmonitor_status_t dlmonitor_python_mark_compile_frames(
    const char* file_substring, const char* function);

/* Reports an event. For FRAMEWORK_OP ENTER/EXIT DLMonitor maintains the
   thread's operator stack, links backward functions to the context of their
   forward op (by forward_thread_id + sequence_number), and then runs the
   domain's callbacks. Safe to call from any thread, without the GIL. */
DLMONITOR_API void dlmonitor_event_emit(dlmonitor_event_t* event);

/* ---- native frames (since 1.1) --------------------------------------- */

/* Turns native (C/C++) frames on (on != 0) or off in the contexts of ops
   entered from Python: their path then reads Python frames -> native frames
   (DLMONITOR_FRAME_NATIVE, named by demangled function, with source file and
   line where debug info has them, else the module path) -> op, the Python
   frames standing in place of the interpreter's own frames. Since 1.4 a
   capture keeps each native frame's return address, and the frame is
   named when first read (dlmonitor_context_frame, dlmonitor_callpath_get),
   not on the thread that met it, so contexts read complete at any time.
   There is one context per return address: call sites of one function
   without line information are sibling contexts with the same frame
   (profiles that DeepContext writes merge them). Once turned on,
   dlmonitor_describe() names the unwinder ("..., native: cfi-cache)").
   Not async-signal-safe: call it before ops run. */
DLMONITOR_API dlmonitor_status_t dlmonitor_native_enable(int on);

/* Function-pointer form of dlmonitor_event_emit, handed to adapters that are
   loaded separately and must not depend on this library's symbols. */
typedef void (*dlmonitor_emit_fn)(dlmonitor_event_t* event);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* DEEPCONTEXT_DLMONITOR_H_ */
