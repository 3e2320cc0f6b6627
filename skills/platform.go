package skills

import (
	"io/fs"
	"os"
	"path/filepath"

	"github.com/lucy-agent/lucy/prompts"
)

// PlatformFS is the platform skills shipped with Lucy: prompts/skills/, embedded.
func PlatformFS() fs.FS {
	sub, err := fs.Sub(prompts.FS, "skills")
	if err != nil {
		panic(err) // unreachable: "skills" is a valid path, and the embed pattern names it
	}
	return sub
}

// OperatorDir is the folder of the operator's skills: LUCY_DATA_DIR/skills/.
func OperatorDir(dataDir string) string {
	return filepath.Join(dataDir, "skills")
}

// OperatorFS is the operator's skills folder, or nil without a data directory. A folder that does not
// exist holds no skills.
func OperatorFS(dataDir string) fs.FS {
	if dataDir == "" {
		return nil
	}
	return os.DirFS(OperatorDir(dataDir))
}
