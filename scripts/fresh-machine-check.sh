#!/bin/sh
# Runs the README's commands on a Debian 12 machine that has never seen the
# project: builds a clean Debian 12 root with mmdebstrap (Debian's package),
# copies a clean clone of this repository's HEAD into it, runs `make demo` there
# (and `make test` with --test) in a chroot inside private mount and PID
# namespaces, checks that the demo's profile holds aten:: operators and
# [backward] subtrees, and prints how long each step took.
#
# It is a developer's check, not part of CI: it downloads a whole root from a
# Debian mirror. Run it as root from the repository; only committed work is
# checked (the clone is of HEAD).
#
#   scripts/fresh-machine-check.sh [--test] [--keep] [--mirror URL]
#
#   --test        also run `make test` (about 45 minutes on 2 cores)
#   --keep        keep the root (its path is printed) instead of deleting it
#   --mirror URL  Debian mirror (default http://deb.debian.org/debian)
#
# The root has only Debian's minbase packages plus `make`, the one command a
# reader must have to type the README's commands.
set -eu

RUN_TEST=0
KEEP=0
MIRROR=http://deb.debian.org/debian
SECURITY=http://deb.debian.org/debian-security
while [ $# -gt 0 ]; do
  case "$1" in
    --test) RUN_TEST=1 ;;
    --keep) KEEP=1 ;;
    --mirror) shift; MIRROR=${1:?--mirror needs a URL} ;;
    -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "fresh-machine-check: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done

say() { echo "fresh-machine-check: $*"; }
if [ "$(id -u)" -ne 0 ]; then
  say "must run as root (it builds a root file system and chroots into it)" >&2
  exit 2
fi
REPO=$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel)
if ! command -v mmdebstrap >/dev/null 2>&1; then
  say "installing mmdebstrap"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends mmdebstrap
fi

WORK=$(mktemp -d /var/tmp/deepcontext-fresh.XXXXXX)
ROOT=$WORK/root
cleanup() {
  status=$?
  if [ "$KEEP" -eq 1 ]; then
    say "root kept in $ROOT"
  elif grep -q " $WORK" /proc/self/mounts; then
    # The mounts live in a namespace that ended with the run; one still
    # visible here means something went wrong: never delete through it.
    say "something is still mounted under $WORK; not deleting it" >&2
  else
    rm -rf --one-file-system "$WORK"
  fi
  exit $status
}
trap cleanup EXIT
trap 'exit 130' INT TERM

start=$(date +%s)
say "building a Debian 12 (bookworm) minbase root in $ROOT"
mmdebstrap --quiet --variant=minbase --include=make bookworm "$ROOT" \
  "deb $MIRROR bookworm main" "deb $MIRROR bookworm-updates main" \
  "deb $SECURITY bookworm-security main"
rooted=$(date +%s)

say "cloning $(git -C "$REPO" rev-parse --short HEAD) into the root"
git clone --quiet --no-local "$REPO" "$ROOT/root/deepcontext"
cp /etc/resolv.conf "$ROOT/etc/resolv.conf"
# Behind a proxy that re-signs TLS (a company's, or this machine's), the
# viewer's npm packages only download with the proxy's CA: hand the one the
# host's Node.js trusts (NODE_EXTRA_CA_CERTS) to the root, as a user there
# would configure it. Nothing else is taken from the host.
EXTRA_CA=""
if [ -n "${NODE_EXTRA_CA_CERTS:-}" ] && [ -f "$NODE_EXTRA_CA_CERTS" ]; then
  cp "$NODE_EXTRA_CA_CERTS" "$ROOT/root/host-extra-ca.crt"
  EXTRA_CA=/root/host-extra-ca.crt
  say "passing the host's extra CA certificates to npm ($NODE_EXTRA_CA_CERTS)"
fi

# What runs inside: the README's commands from the repository root, then an
# independent check of the demo's profile.
cat > "$ROOT/root/fresh-run.sh" <<INNER
set -eu
cd /root/deepcontext
# Its two parts timed apart: the packages (what make demo installs first),
# then make demo itself (which then finds them present).
t0=\$(date +%s)
./scripts/install-deps.sh --demo
ta=\$(date +%s)
make demo
t1=\$(date +%s)
echo "fresh-machine-check: make demo took \$((t1 - t0)) s: packages \$((ta - t0)) s, configure, build and run \$((t1 - ta)) s"
t2=\$(date +%s)
make demo >/dev/null
t3=\$(date +%s)
echo "fresh-machine-check: make demo again (packages present, build up to date) took \$((t3 - t2)) s"
report=\$(build/bin/deepcontext report build/demo/train_cnn.dctx --depth 0 --min-percent 0 --top 0 --width 0)
echo "\$report" | grep -q 'aten::' || { echo "fresh-machine-check: FAILED: no aten:: operators in the demo profile" >&2; exit 1; }
echo "\$report" | grep -qF '[backward]' || { echo "fresh-machine-check: FAILED: no [backward] in the demo profile" >&2; exit 1; }
echo "fresh-machine-check: the demo profile has aten:: operators and [backward]"
if [ "$RUN_TEST" -eq 1 ]; then
  t4=\$(date +%s)
  make test
  t5=\$(date +%s)
  echo "fresh-machine-check: make test took \$((t5 - t4)) s"
fi
INNER

# Private mount and PID namespaces: the mounts vanish and every process
# started inside is killed when the run ends, whatever happens.
unshare --mount --pid --fork --propagation private sh -c '
  set -e
  ROOT=$1
  mount -t proc proc "$ROOT/proc"
  mount -t sysfs sysfs "$ROOT/sys"
  mount --rbind /dev "$ROOT/dev"
  mount --make-rslave "$ROOT/dev"
  mount -t tmpfs tmpfs "$ROOT/dev/shm"
  mount -t tmpfs tmpfs "$ROOT/tmp"
  exec chroot "$ROOT" /usr/bin/env -i HOME=/root TERM=dumb LANG=C.UTF-8 \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    ${2:+NODE_EXTRA_CA_CERTS=$2} \
    /bin/sh /root/fresh-run.sh
' fresh-machine-check "$ROOT" "$EXTRA_CA"
done_at=$(date +%s)
say "root built in $((rooted - start)) s; README commands and checks in $((done_at - rooted)) s; total $((done_at - start)) s"
say "PASSED"
