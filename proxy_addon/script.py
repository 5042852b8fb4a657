"""What ``mitmdump -s`` / ``mitmweb -s`` load (``callgate addon-path`` prints this file's path).

mitmproxy runs a script file outside the package system, so the addon itself lives in the
installed package and this file only hands an instance to mitmproxy.
"""

from callgate.proxy_addon.addon import CallgateAddon

addons = [CallgateAddon()]
