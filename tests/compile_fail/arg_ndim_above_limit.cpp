// expect: npybridge: ndim_is<N> is more dimensions than this tensor type holds
// npybridge::tensor holds NPYBRIDGE_MAX_NDIM (7) dimensions.
#include <npybridge/arg.hpp>

using too_many = npybridge::arg<npybridge::tensor, npybridge::ndim_is<8>>;
static_assert(too_many::spec.has_ndim);
