# find_package(npybridge CONFIG) gives the INTERFACE target npybridge::npybridge:
# npybridge's headers, CPython's and NumPy's headers (Python::Module,
# Python::NumPy) and Boost's (Boost::headers), C++17. The same file serves a
# `cmake --install` prefix and the pip package: headers are at ../../../include.
cmake_minimum_required(VERSION 3.18)
include("${CMAKE_CURRENT_LIST_DIR}/npybridgeDependencies.cmake")

get_filename_component(_npybridge_include "${CMAKE_CURRENT_LIST_DIR}/../../../include" ABSOLUTE)
if(NOT EXISTS "${_npybridge_include}/npybridge/npybridge.hpp")
    set(${CMAKE_FIND_PACKAGE_NAME}_FOUND FALSE)
    set(${CMAKE_FIND_PACKAGE_NAME}_NOT_FOUND_MESSAGE
        "npybridge: the headers are not at ${_npybridge_include} beside this config file; reinstall npybridge")
    return()
endif()

npybridge_find_dependencies()

if(NOT TARGET npybridge::npybridge)
    add_library(npybridge::npybridge INTERFACE IMPORTED)
    set_target_properties(npybridge::npybridge PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${_npybridge_include}")
    # npybridge's folders as -I (see npybridge_link_dependencies): warnings
    # in its headers stay visible too, which its own tests keep at zero.
    if(CMAKE_VERSION VERSION_GREATER_EQUAL 3.25)
        set_target_properties(npybridge::npybridge PROPERTIES SYSTEM FALSE)
    elseif(CMAKE_VERSION VERSION_GREATER_EQUAL 3.23)
        set_target_properties(npybridge::npybridge PROPERTIES IMPORTED_NO_SYSTEM TRUE)
    endif()
    npybridge_link_dependencies(npybridge::npybridge INTERFACE)
endif()
set(npybridge_INCLUDE_DIR "${_npybridge_include}")
