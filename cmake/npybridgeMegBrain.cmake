# npybridge::megbrain for CMake: npybridge::npybridge plus MegBrain's own tensors over the `megengine` wheel
# (find_package(npybridge CONFIG COMPONENTS megbrain), or NPYBRIDGE_MEGBRAIN=ON with add_subdirectory).
# The wheel ships libmegengine_shared.so but not MegBrain's headers: those come from a MegEngine source tree
# of the same version, named by the variable (or environment variable) MEGENGINE_SOURCE, with a
# megbrain_build_config.h made from its template with the switches the wheel was built with
# (megengine_wheel_switches.txt). The wheel is found through Python_EXECUTABLE, without importing it.
include_guard(GLOBAL)

set(_npybridge_megbrain_dir "${CMAKE_CURRENT_LIST_DIR}")

# Usage requirements of a MegBrain target: MegBrain's and MegDNN's include folders, the generated build config,
# the wheel's string ABI (_GLIBCXX_USE_CXX11_ABI=0) and its library, with an rpath. Fails at configure time
# with what to set or install.
function(npybridge_link_megbrain target scope)
    if(NOT MEGENGINE_SOURCE AND DEFINED ENV{MEGENGINE_SOURCE})
        set(MEGENGINE_SOURCE "$ENV{MEGENGINE_SOURCE}")
    endif()
    if(NOT MEGENGINE_SOURCE)
        message(FATAL_ERROR "npybridge: the megbrain component needs a MegEngine source tree (v1.13.0, whose "
                            "headers the megengine wheel does not ship): set MEGENGINE_SOURCE (a checkout: git clone --depth 1 "
                            "--branch v1.13.0 https://github.com/MegEngine/MegEngine.git)")
    endif()
    get_filename_component(_source "${MEGENGINE_SOURCE}" ABSOLUTE)
    foreach(_needed src/core/include/megbrain/tensor.h dnn/include/megdnn/dtype.h src/megbrain_build_config.h.in)
        if(NOT EXISTS "${_source}/${_needed}")
            message(FATAL_ERROR "npybridge: MEGENGINE_SOURCE=${MEGENGINE_SOURCE} is not a MegEngine source tree: "
                                "it has no ${_needed}")
        endif()
    endforeach()

    execute_process(
        COMMAND "${Python_EXECUTABLE}" -c [[
import importlib.util, importlib.metadata, os, sys
spec = importlib.util.find_spec("megengine")
if spec is None or not spec.submodule_search_locations:
    sys.exit("the megengine package is not installed for " + sys.executable + ": pip install megengine==1.13.0 (CPython 3.10)")
if importlib.metadata.version("megengine") != "1.13.0":
    sys.exit("megengine " + importlib.metadata.version("megengine") + " is installed; npybridge knows the build switches of megengine 1.13.0 only")
lib = os.path.join(list(spec.submodule_search_locations)[0], "core", "lib")
if not os.path.exists(os.path.join(lib, "libmegengine_shared.so")):
    sys.exit("no libmegengine_shared.so in " + lib + ": reinstall megengine")
print(lib, end="")
]]
        RESULT_VARIABLE _found OUTPUT_VARIABLE _lib ERROR_VARIABLE _why ERROR_STRIP_TRAILING_WHITESPACE)
    if(NOT _found EQUAL 0)
        message(FATAL_ERROR "npybridge: the megbrain component: ${_why} (Python_EXECUTABLE=${Python_EXECUTABLE})")
    endif()

    # megbrain_build_config.h: every #cmakedefine01 of the template 0, the wheel's switches 1.
    file(STRINGS "${_npybridge_megbrain_dir}/megengine_wheel_switches.txt" _switches REGEX "^[A-Z]")
    file(STRINGS "${_source}/src/megbrain_build_config.h.in" _defines REGEX "^#cmakedefine01 ")
    foreach(_define IN LISTS _defines)
        string(REGEX REPLACE "^#cmakedefine01 +([A-Za-z0-9_]+).*" "\\1" _name "${_define}")
        if(_name IN_LIST _switches)
            set(${_name} 1)
        else()
            set(${_name} 0)
        endif()
    endforeach()
    set(_config "${CMAKE_BINARY_DIR}/npybridge_megbrain")
    configure_file("${_source}/src/megbrain_build_config.h.in" "${_config}/megbrain_build_config.h")

    target_include_directories(${target} ${scope} "${_config}" "${_source}/src/core/include" "${_source}/dnn/include")
    target_compile_definitions(${target} ${scope} _GLIBCXX_USE_CXX11_ABI=0)
    target_link_libraries(${target} ${scope} "-L${_lib}" -l:libmegengine_shared.so "-Wl,-rpath,${_lib}")
endfunction()
