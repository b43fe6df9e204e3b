# Shared by scripts/serve and scripts/test: create ./.venv and install memtrove (and extras) into it.
install_memtrove() {
    target="$1"
    stamp=".venv/.memtrove-installed"
    want="$(cat pyproject.toml | sha256sum | cut -d' ' -f1) $target"
    if [ ! -x .venv/bin/python ]; then
        python3 -m venv .venv >&2
        .venv/bin/python -m pip install --quiet --upgrade pip >&2
    fi
    if [ ! -f "$stamp" ] || ! grep -qxF "$want" "$stamp"; then
        echo "memtrove: installing $target into .venv ..." >&2
        .venv/bin/python -m pip install --quiet --disable-pip-version-check -e "$target" >&2
        echo "$want" > "$stamp"
    fi
}
