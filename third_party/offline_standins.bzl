"""Offline stand-ins for the repositories Bazel 4.2.3's own tools load (@rules_cc, @rules_java,
@remote_coverage_tools), which it would otherwise download: npybridge_dependencies() declares them from
npybridge's tree (third_party/README.md), so a consumer's WORKSPACE needs nothing of its own."""

def _standin_impl(ctx):
    folder = ctx.path(ctx.attr.marker).dirname  # the stand-in's folder in npybridge's tree
    ctx.file("WORKSPACE", "workspace(name = \"%s\")\n" % ctx.name)
    for entry in folder.readdir():
        if entry.basename != "WORKSPACE":
            ctx.symlink(entry, entry.basename)

standin_repository = repository_rule(
    implementation = _standin_impl,
    attrs = {"marker": attr.label(allow_single_file = True, mandatory = True)},
    local = True,
)

def offline_standins():
    """Declares each stand-in that the workspace has not declared itself (a declaration before wins)."""
    existing = native.existing_rules()
    for name in ["rules_cc", "rules_java", "remote_coverage_tools"]:
        if name not in existing:
            standin_repository(name = name, marker = Label("//third_party/%s:BUILD" % name))
