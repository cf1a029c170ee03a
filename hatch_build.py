"""The pip package's long description: README.md without its block for contributors of a checkout (the two
commands, which a wheel does not have), marked by <!-- checkout-only:begin --> / <!-- checkout-only:end -->."""
import pathlib
import re

from hatchling.metadata.plugin.interface import MetadataHookInterface


class CustomMetadataHook(MetadataHookInterface):
    def update(self, metadata):
        text = (pathlib.Path(self.root) / "README.md").read_text(encoding="utf-8")
        text, found = re.subn(r"<!-- checkout-only:begin -->.*?<!-- checkout-only:end -->\n*", "", text, flags=re.S)
        if found != 1:
            raise ValueError("npybridge: README.md must mark its checkout-only block once")
        metadata["readme"] = {"content-type": "text/markdown", "text": text}
