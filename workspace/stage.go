package workspace

import (
	"context"
	"fmt"
	"os"
	"path"
)

// Stage copies the team's files from s into dir (an empty folder on this machine) for a program that
// needs a folder, the sandboxed script, and returns the paths it copied. A workspace larger than
// maxBytes is refused rather than half copied: the script would see a workspace with files missing.
func Stage(ctx context.Context, s Store, team, dir string, maxBytes int64) ([]string, error) {
	infos, err := s.List(ctx, team, ".")
	if err != nil {
		return nil, err
	}
	var total int64
	for _, in := range infos {
		total += in.Size
	}
	if total > maxBytes {
		return nil, fmt.Errorf("the workspace holds %d bytes, more than the %d a script can be given", total, maxBytes)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	var copied []string
	for _, in := range infos {
		if err := checkRel(team, in.Path, false); err != nil {
			continue // a key no tool could have written (such as "a/../b"): not part of the workspace
		}
		data, _, err := s.Read(ctx, team, in.Path)
		if err != nil {
			return nil, err
		}
		if d := path.Dir(in.Path); d != "." {
			if err := root.MkdirAll(d, 0o750); err != nil {
				return nil, err
			}
		}
		if err := root.WriteFile(in.Path, data, 0o640); err != nil {
			return nil, err
		}
		copied = append(copied, in.Path)
	}
	return copied, nil
}
