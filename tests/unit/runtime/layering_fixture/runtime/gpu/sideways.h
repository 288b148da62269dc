// Fixture for check_layering.cmake: the core reaching into a backend and
// a vendor header.
#pragma once
#include <cupti.h>
#include <vector>
#include "runtime/common/spin_lock.h"
#include "runtime/cupti/cupti_loader.h"
