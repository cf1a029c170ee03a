# npybridge's dependencies for CMake: Boost >= 1.81 (Boost.PFR) for the
# Python-free core, and CPython (Development.Module) and NumPy's C headers for
# the rest, each failing at configure time with what to install. Used by
# npybridgeConfig.cmake and the top-level CMakeLists.txt.
include_guard(GLOBAL)

# What npybridge::core needs: Boost's headers with Boost.PFR.
macro(npybridge_find_core_dependencies)
    if(NOT TARGET Boost::headers)
        find_package(Boost 1.81 QUIET)
    endif()
    if(NOT TARGET Boost::headers)
        message(FATAL_ERROR "npybridge: Boost >= 1.81 (for Boost.PFR) was not found: install libboost1.81-dev "
                            "(Debian 12) or set BOOST_ROOT")
    endif()
    get_target_property(_npybridge_boost_dirs Boost::headers INTERFACE_INCLUDE_DIRECTORIES)
    set(_npybridge_pfr_found FALSE)
    foreach(_npybridge_dir IN LISTS _npybridge_boost_dirs)
        if(EXISTS "${_npybridge_dir}/boost/pfr.hpp")
            set(_npybridge_pfr_found TRUE)
        endif()
    endforeach()
    if(NOT _npybridge_pfr_found)
        message(FATAL_ERROR "npybridge: Boost in ${_npybridge_boost_dirs} has no boost/pfr.hpp: "
                            "install Boost >= 1.81 (Debian 12: libboost1.81-dev) or set BOOST_ROOT")
    endif()
endmacro()

# What npybridge::npybridge needs besides: CPython's and NumPy's headers.
macro(npybridge_find_dependencies)
    npybridge_find_core_dependencies()
    # Python: the interpreter whose NumPy the module will import (set
    # Python_EXECUTABLE to choose it; a venv's python is found when active).
    if(NOT TARGET Python::Module OR NOT TARGET Python::NumPy)
        find_package(Python 3.8 COMPONENTS Interpreter Development.Module NumPy QUIET)
    endif()
    if(NOT TARGET Python::Module)
        message(FATAL_ERROR "npybridge: CPython's headers were not found (FindPython's Development.Module): "
                            "install your Python's development headers (Debian: python3-dev) or set Python_EXECUTABLE "
                            "to an interpreter that has them")
    endif()
    if(NOT TARGET Python::NumPy)
        message(FATAL_ERROR "npybridge: NumPy's C headers were not found for ${Python_EXECUTABLE}: "
                            "pip install numpy for that interpreter, or set Python_EXECUTABLE to one that has NumPy")
    endif()
endmacro()

# Usage requirements of npybridge's target besides the core's: CPython
# (Python::Module) and NumPy's folder as an -I of npybridge's own rather than
# through Python::NumPy: Debian links an older NumPy's headers inside CPython's
# folder, imported targets reach the compiler as -isystem in link order (a
# module's own Python::Module first), and every -I folder is searched before
# every -isystem one. So NumPy's headers are the ones found.
function(npybridge_link_dependencies target scope)
    target_include_directories(${target} ${scope} ${Python_NumPy_INCLUDE_DIRS})
    target_link_libraries(${target} ${scope} Python::Module)
endfunction()

# Usage requirements of the core's target: C++17 and Boost's headers.
function(npybridge_link_core_dependencies target scope)
    target_compile_features(${target} ${scope} cxx_std_17)
    target_link_libraries(${target} ${scope} Boost::headers)
endfunction()
