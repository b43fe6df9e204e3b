# Shared by scripts/serve, scripts/test and scripts/bench: create ./.venv and install memtrove into it.
#   install_memtrove [EXTRA...]      e.g. install_memtrove, install_memtrove test
# memtrove is installed editable, so a change to its code needs no install; pip runs only on the first run,
# when pyproject.toml changed or when an extra not installed yet is asked for. The stamp records the
# hash of pyproject.toml and the extras installed with it: once `test` is in, a plain request (or a
# request for `test` again) installs nothing, so switching between serve and test costs nothing.
# When pyproject.toml changed, the extras installed before are installed again with the new ones.
# Everything goes to stderr: scripts/serve's stdout belongs to the MCP protocol.

MEMTROVE_STAMP=".venv/.memtrove-installed"

# Wait for (or take) the install lock, so that two scripts started together do not run pip into one
# .venv at once. Released by install_memtrove_unlock before anything long-lived runs.
install_memtrove_lock() {
    if command -v flock >/dev/null 2>&1; then
        mkdir -p .venv
        exec 9>.venv/.memtrove-install.lock
        flock 9
    fi
}

install_memtrove_unlock() {
    if command -v flock >/dev/null 2>&1; then
        flock -u 9
        exec 9>&-
    fi
}

install_memtrove() {
    hash="$(sha256sum pyproject.toml | cut -d' ' -f1)"
    install_memtrove_lock
    if [ ! -x .venv/bin/python ]; then
        echo "memtrove: creating .venv ..." >&2
        python3 -m venv .venv >&2
        .venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip >&2
        rm -f "$MEMTROVE_STAMP"
    fi
    stamp_hash="" stamp_extras=""
    if [ -f "$MEMTROVE_STAMP" ]; then
        read -r stamp_hash stamp_extras < "$MEMTROVE_STAMP" || true
        case "$stamp_extras" in *[!a-z0-9,_-]*) stamp_hash="" stamp_extras="" ;; esac  # an older stamp
    fi
    # What was installed stays installed (pip removes nothing), so it is part of what is wanted:
    # reinstalled with the rest when pyproject.toml changed, never a reason to install otherwise.
    wanted="$(printf '%s\n' $(printf '%s' "$stamp_extras" | tr ',' ' ') "$@" | sed '/^$/d' | LC_ALL=C sort -u | paste -sd, -)"
    if [ "$stamp_hash" != "$hash" ] || [ "$wanted" != "$stamp_extras" ]; then
        target="."
        [ -z "$wanted" ] || target=".[$wanted]"
        echo "memtrove: installing $target into .venv (first run, pyproject.toml changed or a new extra) ..." >&2
        .venv/bin/python -m pip install --quiet --disable-pip-version-check -e "$target" >&2
        echo "$hash $wanted" > "$MEMTROVE_STAMP"
    fi
    install_memtrove_unlock
}

# Install a directory as a regular (non-editable) package, again only when a file in it changed:
# how scripts/test installs the example plugin, as a stranger's package would be.
install_package_dir() {
    dir="$1"
    stamp=".venv/.memtrove-package-$(printf '%s' "$dir" | tr -c 'A-Za-z0-9_.-' '_')"
    hash="$(find "$dir" -type f ! -path '*/build/*' ! -path '*.egg-info/*' ! -path '*/__pycache__/*' \
        ! -name '*.pyc' -exec sha256sum {} + | LC_ALL=C sort | sha256sum | cut -d' ' -f1)"
    install_memtrove_lock
    if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$hash" ]; then
        echo "memtrove: installing $dir into .venv ..." >&2
        .venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps "./$dir" >&2
        echo "$hash" > "$stamp"
    fi
    install_memtrove_unlock
}
