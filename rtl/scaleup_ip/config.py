# SPDX-License-Identifier: BSD-2-Clause
"""Base class for the frozen per-block configuration dataclasses."""

import dataclasses
import json
import os

from amaranth.lib import wiring

__all__ = ["BlockConfig", "CONFIG_ENV", "ConfiguredComponent", "check_int"]

#: Environment variable that carries a configuration from the harness into a cocotb test.
CONFIG_ENV = "DUT_CONFIG"


@dataclasses.dataclass(frozen=True)
class BlockConfig:
    """A block's hardware parameters: one object builds the RTL, names its build folder,
    reaches the testbench as JSON and configures the golden model.

    Subclasses are frozen dataclasses that validate their fields in ``__post_init__``.
    """

    def slug(self):
        """Return a file-name-safe name, e.g. ``data_width-512_pipeline-2``."""
        return "_".join(f"{k}-{v}" for k, v in dataclasses.asdict(self).items())

    def to_json(self):
        """Serialize to JSON (the inverse of :meth:`from_json`)."""
        return json.dumps(dataclasses.asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text):
        """Rebuild (and so re-validate) a configuration from :meth:`to_json` output."""
        return cls(**json.loads(text))

    @classmethod
    def from_env(cls):
        """Rebuild the configuration the harness passed in :data:`CONFIG_ENV`."""
        return cls.from_json(os.environ[CONFIG_ENV])


def check_int(owner, name, value, allowed):
    """Raise ``TypeError``/``ValueError`` naming ``owner`` and ``name`` unless ``value`` is
    in ``allowed``."""
    if type(value) is not int:
        raise TypeError(f"{owner} {name} must be an integer, not {value!r}")
    if value not in allowed:
        if isinstance(allowed, range) and allowed.step == 1 and len(allowed) > 8:
            choices = f"{allowed.start} .. {allowed.stop - 1}"
        else:
            choices = "one of " + ", ".join(str(v) for v in allowed)
        raise ValueError(f"{owner} {name} must be {choices}, not {value!r}")


class ConfiguredComponent(wiring.Component):
    """A component built from one configuration object of type :attr:`config_class`.

    Subclasses set ``config_class`` and call ``super().__init__(config, members)``, where
    ``members`` may be a function of the configuration (called once it is checked); a
    configuration of another type raises ``TypeError`` naming both.
    """
    config_class = BlockConfig

    def __init__(self, config, members):
        if not isinstance(config, self.config_class):
            self._MustUse__silence = True           # never built: nothing to warn about
            raise TypeError(f"{type(self).__name__} config must be a "
                            f"{self.config_class.__name__}, not {config!r}")
        self._config = config
        super().__init__(members(config) if callable(members) else members)

    @property
    def config(self):
        """The configuration this component was built from."""
        return self._config
