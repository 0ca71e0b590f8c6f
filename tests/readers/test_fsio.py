"""readers/fsio.py listing: a symbolic-link loop in an input folder is not followed round and round."""

import os

import pyarrow.fs as pafs

from readers.fsio import list_traces

SUFFIXES = [".darshan", ".darshan.gz", ".darshan.bz2"]


def test_link_loop_lists_each_log_once(tmp_path):
    root = tmp_path / "logs"
    (root / "2026" / "11").mkdir(parents=True)
    for i in range(200):
        (root / "2026" / "11" / f"j{i:03d}.darshan").write_bytes(b"x")
    for i in range(12):
        (root / f"top{i:02d}.darshan").write_bytes(b"x")
    os.symlink(".", root / "latest")  # the loop: latest -> .
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "far.darshan").write_bytes(b"x")
    os.symlink(outside, root / "more")  # a link out of the tree is still followed
    # pyarrow's recursive selector follows the loop until the path is too long (the 8,570 paths)
    naive = [
        i
        for i in pafs.LocalFileSystem().get_file_info(pafs.FileSelector(str(root), recursive=True))
        if i.type == pafs.FileType.File
    ]
    assert len(naive) > 10 * 213
    got = list_traces([str(root)], SUFFIXES)
    names = sorted(os.path.basename(t.uri) for t in got)
    assert len(got) == 213 and len(set(names)) == 213
    assert "far.darshan" in names and all("/latest/" not in t.uri for t in got)
