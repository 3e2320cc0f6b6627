package documents

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"path"
	"strings"

	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/tools/files"
)

// lucy_generate_csv creates a CSV file and shares it in the conversation.

var _ = tools.Register(tools.Def{
	Spec: tools.Spec{
		Name: tools.GenerateCSV,
		Description: "Create a CSV file from rows of cells, save it in the team's workspace and share it in the current " +
			"Slack thread. The first row is usually the header. Every cell is a string (write numbers as \"42\"). " +
			"Replacing an existing file with different rows waits for a person's approval.",
		Human: "creating a CSV file",
		Long:  true,
	},
	Required: []string{"filename", "rows"},
	Props: func() []tools.Prop {
		return []tools.Prop{
			tools.StrProp("filename", "File name, e.g. \"q3-signups.csv\" (\".csv\" is added if missing); may include "+
				"folders relative to the workspace.", 1, tools.MaxPathLen),
			tools.Prop{Name: "rows", Schema: map[string]any{
				"type":        "array",
				"description": "The rows, each an array of cell strings.",
				"minItems":    1,
				"maxItems":    MaxCSVRows,
				"items": map[string]any{
					"type":  "array",
					"items": map[string]any{"type": "string"},
				},
			}},
		}
	},
}, (*Generator).generateCSV)

type generateCSVArgs struct {
	Filename string     `json:"filename"`
	Rows     [][]string `json:"rows"`
}

func (a *generateCSVArgs) FilePath() string { return a.Filename }

// generateCSV writes the rows to a workspace file and shares it in the conversation's thread with the
// files v2 upload. The file is written first, so that a failed upload still leaves the deliverable in
// the workspace (and the model is told so).
func (g *Generator) generateCSV(ctx context.Context, inv tools.Invocation) (tools.Output, error) {
	var args generateCSVArgs
	rel, err := files.DecodePath(inv, tools.GenerateCSV, false, &args)
	if err != nil {
		return tools.Output{}, err
	}
	if !strings.EqualFold(path.Ext(rel), ".csv") {
		rel += ".csv"
	}
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	w.UseCRLF = true // RFC 4180, and what spreadsheet applications expect
	cols := 0
	for _, row := range args.Rows {
		cols = max(cols, len(row))
	}
	if cols == 0 {
		return tools.Output{}, tools.ArgErrorf(tools.GenerateCSV, "every row is empty; give at least one cell")
	}
	if err := w.WriteAll(args.Rows); err != nil {
		return tools.Output{}, fmt.Errorf("%s: encode: %w", tools.GenerateCSV, err)
	}
	data := buf.Bytes()
	if len(data) > tools.MaxFileBytes {
		return tools.Output{}, tools.ArgErrorf(tools.GenerateCSV, "the CSV would be %s; the limit is 1 MB: split the data into several files",
			files.HumanBytes(int64(len(data))))
	}

	shape := fmt.Sprintf("%d rows, %d columns, %s", len(args.Rows), cols, files.HumanBytes(int64(len(data))))
	return g.ws.SaveAndShare(ctx, inv, tools.GenerateCSV, rel, data, shape, "exactly these rows")
}
