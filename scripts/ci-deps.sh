#!/bin/sh
# Installs what the test suite needs besides the Rust toolchain. Idempotent: it does nothing
# when everything is there. .ci/run runs it before `cargo test`.
#
# - docker-registry (Debian's CNCF distribution 2.8): the registry tests of asp push/pull
#   start it on 127.0.0.1 themselves; the package's own service (:5000 on every interface) is
#   kept from starting and left disabled.
set -eu

have_registry() {
    [ -n "${ASP_TEST_REGISTRY_BIN:-}" ] && [ -x "$ASP_TEST_REGISTRY_BIN" ] && return 0
    command -v docker-registry >/dev/null 2>&1 || [ -x /usr/bin/docker-registry ]
}

if ! have_registry; then
    if [ "$(id -u)" != 0 ]; then
        echo "ci-deps: docker-registry is missing and this is not root;" \
            "install it with: sudo apt-get install -y docker-registry" >&2
        exit 1
    fi
    policy=/usr/sbin/policy-rc.d
    made_policy=
    if [ ! -e "$policy" ]; then
        printf '#!/bin/sh\nexit 101\n' >"$policy"
        chmod 755 "$policy"
        made_policy=1
        trap 'rm -f "$policy"' EXIT
    fi
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends docker-registry >/dev/null
    if command -v systemctl >/dev/null 2>&1; then
        systemctl disable --now docker-registry >/dev/null 2>&1 || true
    fi
    [ -n "$made_policy" ] && rm -f "$policy"
    have_registry || { echo "ci-deps: docker-registry did not install" >&2; exit 1; }
    echo "ci-deps: installed docker-registry ($(dpkg-query -W -f='${Version}' docker-registry))" >&2
fi
