// npybridge/tracker.hpp — tags C++ objects with where in Python they were created, to name it in later errors.
#pragma once

#include <npybridge/core/config.hpp>
#include <npybridge/core/errors.hpp>
#include <npybridge/python.hpp>
#include <npybridge/python_errors.hpp>
#include <npybridge/core/detail/tag_table.hpp>

#include <string>
#include <string_view>
#include <utility>

namespace npybridge NPYBRIDGE_NAMESPACE_ATTRIBUTES {

/// The caller's Python stack as a tag: a traceback.StackSummary (new reference), or nullptr with no error set. GIL
/// required.
inline object current_python_stack();

/// MegEngine's OprPyTracker, generalized: while a scope is active, each key reported by on_create() is tagged with the
/// scope's object; blame() names it in an error. Every member needs the GIL, which makes sharing safe.
template <class Key, class Hash = std::hash<Key>>
class origin_tracker {
public:
    /// An active scope; ends on destruction or end(). Move-only.
    class scope {
    public:
        scope(scope&& other) noexcept : m_tracker(std::exchange(other.m_tracker, nullptr)) {}
        scope& operator=(scope&&) = delete;
        scope(const scope&) = delete;
        ~scope() { end(); }
        /// Ends the scope now (idempotent).
        void end() noexcept {
            if (m_tracker != nullptr) std::exchange(m_tracker, nullptr)->leave();
        }

    private:
        friend class origin_tracker;
        explicit scope(origin_tracker* tracker) noexcept : m_tracker(tracker) {}
        origin_tracker* m_tracker;
    };

    origin_tracker() = default;
    origin_tracker(const origin_tracker&) = delete;
    origin_tracker& operator=(const origin_tracker&) = delete;

    /// Releases every tag (taking the GIL if needed; nothing once the interpreter is gone).
    ~origin_tracker();

    /// Starts tagging new keys with `tag`. A nested scope of the same tracker is an error: which tag wins is the
    /// ambiguity the tracker removes.
    [[nodiscard]] scope enter(PyObject* tag);

    /// True while a scope is active.
    bool active() const noexcept { return m_current != nullptr; }

    /// Tags a new key with the active scope's tag, replacing an old one.
    void on_create(const Key& key);

    /// A key's tag (borrowed), or nullptr.
    PyObject* origin(const Key& key) const;

    /// `message`, then "created at: " and the tag's repr, or a note that the key has no origin.
    std::string blame(const Key& key, std::string_view message = {}) const;

    /// Drops a key's tag.
    void forget(const Key& key);

    /// Drops every tag.
    void clear() noexcept;

    std::size_t size() const noexcept { return m_tags.size(); }

    /// Visits every tag, for the tp_traverse of an object holding the tracker; clear() is the tp_clear.
    int traverse(visitproc visit, void* arg) const;

private:
    void leave() noexcept;

    detail::tag_table<Key, PyObject*, Hash> m_tags;
    PyObject* m_current = nullptr;
};

/// Example: tensors tagged with the Python line that made them, named in a later error.
/// ```cpp
/// #include <npybridge/tracker.hpp>
///
/// npybridge::origin_tracker<const void*> made_at;
///
/// void make_under_tag(const void* tensor_id) {
///     npybridge::object where = npybridge::current_python_stack();
///     if (!where) return;
///     auto scope = made_at.enter(where.get());
///     made_at.on_create(tensor_id);  // later: made_at.blame(tensor_id, "shape mismatch")
/// }
/// ```

// ---- Definitions

inline object current_python_stack() {
    object module = object::steal(PyImport_ImportModule("traceback"));
    object stack = module ? object::steal(PyObject_CallMethod(module.get(), "extract_stack", nullptr)) : object{};
    if (!stack) PyErr_Clear();
    return stack;
}

template <class Key, class Hash>
origin_tracker<Key, Hash>::~origin_tracker() {
    under_gil([&]() noexcept {
        clear();
        Py_CLEAR(m_current);
    });
}

template <class Key, class Hash>
typename origin_tracker<Key, Hash>::scope origin_tracker<Key, Hash>::enter(PyObject* tag) {
    if (tag == nullptr) throw error("origin_tracker: a scope needs a tag object (got NULL)");
    if (m_current != nullptr) {
        throw error("origin_tracker: a scope is already active (tag " + safe_repr(m_current) +
                    "); scopes of one tracker do not nest");
    }
    Py_INCREF(tag);
    m_current = tag;
    return scope(this);
}

template <class Key, class Hash>
void origin_tracker<Key, Hash>::on_create(const Key& key) {
    if (m_current == nullptr) return;
    Py_INCREF(m_current);
    auto [slot, inserted] = m_tags.try_emplace(key, m_current);
    if (!inserted) {
        PyObject* old = std::exchange(*slot, m_current);
        Py_DECREF(old);
    }
}

template <class Key, class Hash>
PyObject* origin_tracker<Key, Hash>::origin(const Key& key) const {
    PyObject* const* found = m_tags.find(key);
    return found ? *found : nullptr;
}

template <class Key, class Hash>
std::string origin_tracker<Key, Hash>::blame(const Key& key, std::string_view message) const {
    std::string text(message);
    if (!text.empty()) text += "\n";
    PyObject* tag = origin(key);
    return text + (tag ? "created at: " + safe_repr(tag) : std::string("created outside any origin_tracker scope"));
}

template <class Key, class Hash>
void origin_tracker<Key, Hash>::forget(const Key& key) {
    PyObject* const* found = m_tags.find(key);
    if (!found) return;
    PyObject* tag = *found;
    m_tags.erase(key);
    Py_DECREF(tag);
}

template <class Key, class Hash>
void origin_tracker<Key, Hash>::clear() noexcept {
    const auto tags = m_tags.take();  // a decref may run code that uses the tracker
    tags.for_each([](const Key&, PyObject* tag) {
        Py_DECREF(tag);
        return 0;
    });
}

template <class Key, class Hash>
int origin_tracker<Key, Hash>::traverse(visitproc visit, void* arg) const {
    const int stop = m_tags.for_each([&](const Key&, PyObject* tag) {
        Py_VISIT(tag);
        return 0;
    });
    if (stop != 0) return stop;
    Py_VISIT(m_current);
    return 0;
}

template <class Key, class Hash>
void origin_tracker<Key, Hash>::leave() noexcept {
    if (!under_gil([&]() noexcept { Py_CLEAR(m_current); })) m_current = nullptr;
}

}  // namespace npybridge
