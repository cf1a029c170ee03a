# find_package(npybridge CONFIG) gives two INTERFACE targets:
#   npybridge::core       the Python-free headers (include/npybridge/core/), Boost's
#                         headers (Boost::headers), C++17;
#   npybridge::npybridge  everything: the core, CPython's and NumPy's headers
#                         (Python::Module, Python::NumPy);
#   npybridge::megbrain   with COMPONENTS megbrain only: npybridge::npybridge plus
#                         MegBrain's headers and the megengine wheel's library
#                         (MEGENGINE_SOURCE; npybridgeMegBrain.cmake).
# find_package(npybridge CONFIG COMPONENTS core) gives the core alone and needs
# no Python. The same file serves a `cmake --install` prefix and the pip
# package: headers are at ../../../include.
cmake_minimum_required(VERSION 3.18)
include("${CMAKE_CURRENT_LIST_DIR}/npybridgeDependencies.cmake")

get_filename_component(_npybridge_include "${CMAKE_CURRENT_LIST_DIR}/../../../include" ABSOLUTE)
if(NOT EXISTS "${_npybridge_include}/npybridge/npybridge.hpp")
    set(${CMAKE_FIND_PACKAGE_NAME}_FOUND FALSE)
    set(${CMAKE_FIND_PACKAGE_NAME}_NOT_FOUND_MESSAGE
        "npybridge: the headers are not at ${_npybridge_include} beside this config file; reinstall npybridge")
    return()
endif()

# The components asked for: core, python (npybridge::npybridge); both when none is named.
set(_npybridge_components ${${CMAKE_FIND_PACKAGE_NAME}_FIND_COMPONENTS})
if(NOT _npybridge_components)
    set(_npybridge_components core python)
endif()
foreach(_npybridge_component IN LISTS _npybridge_components)
    if(NOT _npybridge_component MATCHES "^(core|python|megbrain)$")
        set(${CMAKE_FIND_PACKAGE_NAME}_FOUND FALSE)
        set(${CMAKE_FIND_PACKAGE_NAME}_NOT_FOUND_MESSAGE
            "npybridge: no component '${_npybridge_component}' (npybridge has core, python and megbrain)")
        return()
    endif()
    set(${CMAKE_FIND_PACKAGE_NAME}_${_npybridge_component}_FOUND TRUE)
endforeach()
if("megbrain" IN_LIST _npybridge_components AND NOT "python" IN_LIST _npybridge_components)
    list(APPEND _npybridge_components python)  # megbrain_compat.hpp speaks NumPy
endif()

if("python" IN_LIST _npybridge_components)
    npybridge_find_dependencies()
else()
    npybridge_find_core_dependencies()
endif()

# npybridge's folder as -I (see npybridge_link_dependencies): warnings in its
# headers stay visible too, which its own tests keep at zero.
function(_npybridge_imported_target target)
    add_library(${target} INTERFACE IMPORTED)
    string(REPLACE ";" "\\;" _npybridge_include_item "${_npybridge_include}")  # one folder, whatever it holds
    set_target_properties(${target} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${_npybridge_include_item}")
    if(CMAKE_VERSION VERSION_GREATER_EQUAL 3.25)
        set_target_properties(${target} PROPERTIES SYSTEM FALSE)
    elseif(CMAKE_VERSION VERSION_GREATER_EQUAL 3.23)
        set_target_properties(${target} PROPERTIES IMPORTED_NO_SYSTEM TRUE)
    endif()
endfunction()

if(NOT TARGET npybridge::core)
    _npybridge_imported_target(npybridge::core)
    npybridge_link_core_dependencies(npybridge::core INTERFACE)
endif()
if("python" IN_LIST _npybridge_components AND NOT TARGET npybridge::npybridge)
    _npybridge_imported_target(npybridge::npybridge)
    target_link_libraries(npybridge::npybridge INTERFACE npybridge::core)
    npybridge_link_dependencies(npybridge::npybridge INTERFACE)
endif()
if("megbrain" IN_LIST _npybridge_components AND NOT TARGET npybridge::megbrain)
    include("${CMAKE_CURRENT_LIST_DIR}/npybridgeMegBrain.cmake")
    add_library(npybridge::megbrain INTERFACE IMPORTED)
    target_link_libraries(npybridge::megbrain INTERFACE npybridge::npybridge)
    npybridge_link_megbrain(npybridge::megbrain INTERFACE)
endif()
set(npybridge_INCLUDE_DIR "${_npybridge_include}")
