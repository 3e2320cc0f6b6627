package documents

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/go-pdf/fpdf"
	"golang.org/x/image/font/gofont/goregular"

	"github.com/lucy-agent/lucy/tools/tooltest"
)

// BenchmarkExtractPDFRetained: what a worker keeps once a PDF was read, as lucy_search_files reads
// each PDF of the workspace (Extract, its passages dropped once indexed): a 60-page report in an
// embedded TrueType font with a ToUnicode map, every page a dozen sentences. The
// figures to read are retained-MiB and peak-MiB (tooltest.ReportRetained).
func BenchmarkExtractPDFRetained(b *testing.B) {
	p := fpdf.New("P", "mm", "A4", "")
	p.AddUTF8FontFromBytes("gosans", "", goregular.TTF)
	p.SetFont("gosans", "", 10)
	for i := 1; i <= 60; i++ {
		p.AddPage()
		p.MultiCell(0, 5, strings.Repeat(fmt.Sprintf("Page %d of the annual review: revenue, staffing, the office moves "+
			"of the year and what Zürich's team shipped. ", i), 12), "", "L", false)
	}
	var buf bytes.Buffer
	if err := p.Output(&buf); err != nil {
		b.Fatal(err)
	}
	data := buf.Bytes()
	tooltest.ReportRetained(b, func(b *testing.B) {
		ps, err := Extract("annual.pdf", data)
		if err != nil || len(ps) != 60 || !strings.Contains(ps[59].Text, "Page 60 of the annual review") {
			b.Fatalf("%v: %d passages", err, len(ps))
		}
	})
}
