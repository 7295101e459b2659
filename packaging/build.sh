#!/usr/bin/env bash
# Build the one-folder executable and a tar.gz of it (symlinks kept) in build/.
# Usage: bash packaging/build.sh   (needs: pip install -r requirements-dev.txt; no PyTorch needed)
set -euo pipefail
cd "$(dirname "$0")/.."
version=$(python3 -c "import core; print(core.__version__)")
python3 -m PyInstaller --noconfirm --clean --log-level WARN \
  --distpath build/dist --workpath build/work packaging/trainrig.spec
cp packaging/trainrig.desktop build/dist/TrainRig/
arch=$(uname -m)
tar -C build/dist -czf "build/TrainRig-${version}-linux-${arch}.tar.gz" TrainRig
du -sh build/dist/TrainRig "build/TrainRig-${version}-linux-${arch}.tar.gz"
