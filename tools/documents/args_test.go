package documents

import (
	"testing"

	"github.com/lucy-agent/lucy/tools"
)

// The mistakes a model makes with the document tools come back as an *tools.ArgError naming the
// problem, before anything is written.
func TestDocumentToolsArgValidation(t *testing.T) {
	tests := []struct {
		tool, args string
		want       []string
	}{
		{tools.GenerateCSV, `{"filename": "a.csv"}`, []string{`missing required field "rows"`}},
		{tools.GenerateCSV, `{"filename": "a.csv", "rows": []}`, []string{`"rows" must have at least 1 item`}},
		{tools.GenerateCSV, `{"filename": "a.csv", "rows": ["a,b"]}`, []string{`"rows[0]" must be an array (got the string "a,b")`}},
		{tools.GenerateCSV, `{"filename": "a.csv", "rows": [["a", 1]]}`, []string{`"rows[0][1]" must be a string (got the number 1)`}},
		{tools.GenerateCSV, `{"filename": "a.csv", "rows": [[]]}`, []string{"every row is empty"}},
		{tools.GenerateCSV, `{"filename": "/tmp/a.csv", "rows": [["a"]]}`, []string{"absolute path"}},
		{GenerateExcel, `{"filename": "a.xlsx"}`, []string{`missing required field "sheets"`}},
		{GeneratePDF, `{"markdown": "x"}`, []string{`missing required field "filename"`}},
		{GenerateChart, `{"filename": "c.png", "type": "bar", "labels": ["a"], "series": [{"values": [1]}]}`, []string{`missing the field "name"`}},
	}
	r := newTestDocs(t, nil)
	for _, tt := range tests {
		t.Run(tt.tool, func(t *testing.T) {
			_, err := run(t, r, tt.tool, tt.args)
			wantArgError(t, err, tt.tool, tt.want...)
		})
	}
}
