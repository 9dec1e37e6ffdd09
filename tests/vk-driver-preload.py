#!/usr/bin/python3
"""Print the Vulkan drivers (ICD libraries) the loader would open, as an LD_PRELOAD list.

Why: LeakSanitizer checks for leaks at exit. The Vulkan loader dlcloses a driver on
vkDestroyInstance, and Mesa's drivers (seen with lavapipe 22.3.6-1+deb12u2) keep small blocks
that are reachable only from their own globals (one-time initialisations under pthread_once).
Once the driver is unmapped nothing points at those blocks any more, and LSan reports them as
"Direct leak ... (<unknown module>)": memory that was still in use when the driver went away,
not a leak of ours. A preloaded library is never unloaded, so with the drivers preloaded their
globals stay mapped, those blocks stay reachable, and nothing needs suppressing: every block that
nobody references at exit, ours or a driver object we failed to destroy, is still reported
(planted faults vk_leak_host and vk_leak_buffer, tests/planted-faults.txt).

The ICD manifests are found as the loader finds them: VK_DRIVER_FILES or VK_ICD_FILENAMES
(files or directories, ':'-separated) when set, else the icd.d directories under
XDG_CONFIG_DIRS, /etc, XDG_DATA_HOME and XDG_DATA_DIRS. Only libraries that exist and are built
for this machine's ELF class and architecture are printed (a preload of another architecture's
library would make ld.so warn on every process's stderr). Prints nothing when there are none.
"""
import glob
import json
import os
import struct
import sys


def elf_id(path):
    """(EI_CLASS, e_machine) of an ELF file, or None."""
    try:
        with open(path, "rb") as f:
            h = f.read(20)
    except OSError:
        return None
    if len(h) < 20 or h[:4] != b"\x7fELF":
        return None
    endian = "<" if h[5] == 1 else ">"
    return h[4], struct.unpack(endian + "H", h[18:20])[0]


def manifests():
    env = os.environ.get("VK_DRIVER_FILES") or os.environ.get("VK_ICD_FILENAMES")
    if env:
        places = [p for p in env.split(":") if p]
    else:
        home = os.path.expanduser("~")
        config = (os.environ.get("XDG_CONFIG_DIRS") or "/etc/xdg").split(":") + ["/etc"]
        data = [os.environ.get("XDG_DATA_HOME") or os.path.join(home, ".local/share")]
        data += (os.environ.get("XDG_DATA_DIRS") or "/usr/local/share:/usr/share").split(":")
        places = [os.path.join(d, "vulkan", "icd.d") for d in config + data if d]
    for p in places:
        if os.path.isdir(p):
            yield from sorted(glob.glob(os.path.join(p, "*.json")))
        elif os.path.isfile(p):
            yield p


def main():
    me = elf_id("/proc/self/exe") or elf_id(sys.executable)
    libs = []
    for m in manifests():
        try:
            with open(m) as f:
                lib = json.load(f)["ICD"]["library_path"]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if not os.path.isabs(lib):
            lib = os.path.join(os.path.dirname(m), lib) if "/" in lib else None
        if lib and os.path.isfile(lib) and elf_id(lib) == me and lib not in libs:
            libs.append(lib)
    print(":".join(libs))


if __name__ == "__main__":
    main()
