package documents

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"image"
	_ "image/jpeg" // workspace images embedded in a PDF
	_ "image/png"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/go-pdf/fpdf"
	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/tools/files"
	"github.com/lucy-agent/lucy/workspace"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	extast "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/text"
	"golang.org/x/image/font/gofont/gobold"
	"golang.org/x/image/font/gofont/gobolditalic"
	"golang.org/x/image/font/gofont/goitalic"
	"golang.org/x/image/font/gofont/gomono"
	"golang.org/x/image/font/gofont/goregular"
	"golang.org/x/image/font/sfnt"
)

// The PDF renderer: Markdown (goldmark, with GitHub tables) laid out with fpdf in the Go fonts, which
// are embedded in the binary (BSD-licensed, covering Latin, Greek and Cyrillic), so a PDF needs
// nothing installed and shows accented and non-Latin text.

var _ = tools.Register(tools.Def{
	Spec: tools.Spec{
		Name: GeneratePDF,
		Description: "Create a PDF document from Markdown, save it in the team's workspace and share it in the " +
			"current thread. Supported: headings (#, ##, ###), paragraphs with **bold**, *italic* and `code`, " +
			"bulleted and numbered lists (nested), tables (GitHub style), code blocks, block quotes, horizontal " +
			"rules, links (shown with their URL), and images that are PNG or JPEG files of the workspace " +
			"(`![Signups by week](charts/signups.png)`, e.g. made with lucy_generate_chart). Text may be in any " +
			"language written in Latin, Greek or Cyrillic script (other characters, such as emoji, are left out). " +
			"Replacing an existing file with different content waits for a person's approval.",
		Human: "creating a PDF",
		Long:  true,
	},
	Required: []string{"filename", "markdown"},
	Props: func() []tools.Prop {
		return []tools.Prop{
			tools.StrProp("filename", "File name, e.g. \"weekly-report.pdf\" (\".pdf\" is added if missing); may include folders.", 1, tools.MaxPathLen),
			tools.StrProp("title", "Document title, shown at the top of the first page and in the PDF's properties.", 0, 200),
			tools.StrProp("markdown", "The document's content in Markdown.", 1, MaxMarkdownChars),
		}
	},
}, (*Generator).generatePDF)

type generatePDFArgs struct {
	Filename string `json:"filename"`
	Title    string `json:"title"`
	Markdown string `json:"markdown"`
}

func (a *generatePDFArgs) FilePath() string { return a.Filename }

// maxPDFBytes bounds a generated PDF: more than other generated files, since images make it large.
const maxPDFBytes = 4 * tools.MaxFileBytes

func (g *Generator) generatePDF(ctx context.Context, inv tools.Invocation) (tools.Output, error) {
	var args generatePDFArgs
	rel, err := files.DecodePath(inv, GeneratePDF, false, &args)
	if err != nil {
		return tools.Output{}, err
	}
	rel = withExt(rel, ".pdf")
	if strings.TrimSpace(args.Markdown) == "" {
		return tools.Output{}, tools.ArgErrorf(GeneratePDF, "\"markdown\" is blank: give the document's content")
	}
	st, err := g.ws.Store(inv.Team)
	if err != nil {
		return tools.Output{}, err
	}
	images := func(p string) ([]byte, error) {
		clean, err := files.CleanPath(GeneratePDF, p, false)
		if err != nil {
			return nil, err
		}
		data, _, err := st.Read(ctx, inv.Team, clean)
		if err != nil {
			return nil, fmt.Errorf("%s is not a file of the workspace", p)
		}
		if len(data) > maxPDFBytes {
			data = data[:maxPDFBytes]
		}
		return data, nil
	}
	doc, err := renderPDF(args.Title, args.Markdown, images, g.now())
	if err != nil {
		return tools.Output{}, err
	}
	data := doc.data
	if len(data) > maxPDFBytes {
		return tools.Output{}, tools.ArgErrorf(GeneratePDF, "the PDF would be %s; the limit is 4 MB: use fewer or smaller images", files.HumanBytes(int64(len(data))))
	}
	// The PDF library's font subsetting does not give the same bytes twice for the same text, and the
	// file carries its creation time. So a repeated call (an activity retried after a crash, an
	// operator's reset, the model asking again) would find "different" content and ask a person to
	// approve replacing the file with itself. The file records what it was made from instead: made
	// from the same source, the workspace's file is the result.
	if old := sameSourcePDF(ctx, st, inv.Team, rel, doc.source); old != nil {
		data = old
	}
	shape := fmt.Sprintf("%d page(s), %s", doc.pages, files.HumanBytes(int64(len(data))))
	out, err := g.ws.SaveAndShare(ctx, inv, GeneratePDF, rel, data, shape, "exactly this content")
	if err != nil || out.NeedsApproval != nil {
		return out, err
	}
	if notes := doc.notes(); notes != "" {
		out.Content += " " + notes
	}
	return out, nil
}

// renderedPDF is a laid-out document and what the model should hear about it.
type renderedPDF struct {
	data  []byte
	pages int
	// source is the digest of what the PDF was made from (title, Markdown, the images' bytes),
	// recorded in the file (xmpPacket).
	source  string
	missing []string // images that could not be included
	dropped []rune   // distinct characters the fonts lack, in order of appearance
	nDrop   int
}

func (p *renderedPDF) notes() string {
	var notes []string
	if len(p.missing) > 0 {
		notes = append(notes, fmt.Sprintf("These images could not be included (they are not PNG or JPEG files of the workspace), "+
			"so the PDF says so in their place: %s.", strings.Join(p.missing, ", ")))
	}
	if p.nDrop > 0 {
		quoted := make([]string, len(p.dropped))
		for i, r := range p.dropped {
			quoted[i] = strconv.QuoteRune(r)
		}
		notes = append(notes, fmt.Sprintf("%d character(s) were left out because the PDF's fonts cover Latin, Greek and "+
			"Cyrillic script but not these: %s.", p.nDrop, strings.Join(quoted, ", ")))
	}
	return strings.Join(notes, " ")
}

// sameSourcePDF returns the workspace's file rel when it is a PDF made from source, else nil.
func sameSourcePDF(ctx context.Context, st workspace.Store, team, rel, source string) []byte {
	old, _, err := st.Read(ctx, team, rel)
	if err != nil || len(old) > maxPDFBytes || !bytes.Contains(old, []byte(sourceAttr(source))) {
		return nil
	}
	return old
}

func sourceAttr(source string) string { return `lucy:source="` + source + `"` }

// xmpPacket is the PDF's XMP metadata: the source digest in Lucy's namespace. fpdf writes it as an
// uncompressed metadata stream without linking it from the catalogue, so viewers do not show it; the
// check above needs only its bytes.
func xmpPacket(source string) []byte {
	return []byte(`<?xpacket begin="\ufeff" id="W5M0MpCehiHzreSzNTczkc9d"?>
<x:xmpmeta xmlns:x="adobe:ns:meta/">
 <rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">
  <rdf:Description rdf:about="" xmlns:lucy="https://github.com/lucy-agent/lucy/ns/1.0/" ` + sourceAttr(source) + `/>
 </rdf:RDF>
</x:xmpmeta>
<?xpacket end="r"?>`)
}

// pdfDoc lays out one document.
type pdfDoc struct {
	pdf    *fpdf.Fpdf
	out    *renderedPDF
	images func(string) ([]byte, error)
	width  float64 // text width
	left   float64
	// style is the inline style stack while writing a paragraph ("", "B", "I", "BI").
	bold, italic int
	code         bool
	size         float64
	lineH        float64
	nImages      int
}

const (
	fontSans = "Go"
	fontMono = "GoMono"
	bodySize = 10.5
)

// pdfLayoutVersion is part of a PDF's source digest: a change of layout makes new files of old sources.
const pdfLayoutVersion = "1"

// renderPDF renders Markdown to PDF.
func renderPDF(title, markdown string, images func(string) ([]byte, error), now time.Time) (*renderedPDF, error) {
	pdf := fpdf.New("P", "mm", "A4", "")
	pdf.AddUTF8FontFromBytes(fontSans, "", goregular.TTF)
	pdf.AddUTF8FontFromBytes(fontSans, "B", gobold.TTF)
	pdf.AddUTF8FontFromBytes(fontSans, "I", goitalic.TTF)
	pdf.AddUTF8FontFromBytes(fontSans, "BI", gobolditalic.TTF)
	pdf.AddUTF8FontFromBytes(fontMono, "", gomono.TTF)
	pdf.SetMargins(18, 18, 18)
	pdf.SetAutoPageBreak(true, 18)
	pdf.SetCatalogSort(true) // resources in a fixed order rather than map order
	pdf.SetCreationDate(now)
	pdf.SetModificationDate(now)
	pdf.SetProducer("Lucy", true)
	if title != "" {
		pdf.SetTitle(title, true)
	}
	pdf.SetFooterFunc(func() {
		pdf.SetY(-12)
		pdf.SetFont(fontSans, "", 8)
		pdf.SetTextColor(120, 120, 120)
		pdf.CellFormat(0, 5, fmt.Sprintf("%d", pdf.PageNo()), "", 0, "C", false, 0, "")
		pdf.SetTextColor(0, 0, 0)
	})
	source := sha256.New()
	fmt.Fprintf(source, "%s\x00%d:%s\x00%d:%s", pdfLayoutVersion, len(title), title, len(markdown), markdown)
	out := &renderedPDF{}
	pdf.AddPage()
	w, _ := pdf.GetPageSize()
	l, _, rm, _ := pdf.GetMargins()
	d := &pdfDoc{pdf: pdf, out: out, width: w - l - rm, left: l, size: bodySize, lineH: 5.4}
	d.images = func(p string) ([]byte, error) {
		data, err := images(p)
		fmt.Fprintf(source, "\x00%d:%s", len(p), p)
		if err == nil {
			sum := sha256.Sum256(data)
			source.Write(sum[:])
		}
		return data, err
	}
	if title != "" {
		pdf.SetFont(fontSans, "B", 20)
		pdf.MultiCell(0, 9, d.clean(title), "", "L", false)
		pdf.Ln(3)
	}
	src := []byte(markdown)
	md := goldmark.New(goldmark.WithExtensions(extension.Table, extension.Strikethrough))
	doc := md.Parser().Parse(text.NewReader(src))
	d.blocks(doc, src, 0)
	out.source = "sha256:" + hex.EncodeToString(source.Sum(nil))
	pdf.SetXmpMetadata(xmpPacket(out.source))
	if err := pdf.Error(); err != nil {
		return nil, fmt.Errorf("%s: lay out the PDF: %w", GeneratePDF, err)
	}
	var buf bytes.Buffer
	if err := pdf.Output(&buf); err != nil {
		return nil, fmt.Errorf("%s: write the PDF: %w", GeneratePDF, err)
	}
	out.data, out.pages = buf.Bytes(), pdf.PageNo()
	return out, nil
}

// fontRunes is the set of characters the embedded Go fonts draw (all five faces cover the same
// 709, in the Basic Multilingual Plane). Any other character would print as an empty box.
var fontRunes = sync.OnceValue(func() map[rune]bool {
	f, err := sfnt.Parse(goregular.TTF)
	if err != nil {
		panic(err) // the font is part of the binary
	}
	var buf sfnt.Buffer
	set := map[rune]bool{}
	for r := rune(0); r <= 0xFFFF; r++ {
		if g, err := f.GlyphIndex(&buf, r); err == nil && g != 0 {
			set[r] = true
		}
	}
	return set
})

// glyphSubstitutes stand in for symbols models like to write that the fonts lack.
var glyphSubstitutes = map[rune]string{
	'✓': "√", '✔': "√", '✅': "√", '☑': "√", '✗': "×", '✘': "×", '❌': "×", '☐': "□",
	'★': "*", '⭐': "*", '▶': "►", '➜': "→", '➔': "→", '\t': " ",
}

// clean returns s with the characters the fonts lack replaced or left out (and noted for the model);
// invisible format characters (zero-width joiners, variation selectors) go silently.
func (d *pdfDoc) clean(s string) string {
	ok := fontRunes()
	all := true
	for _, r := range s {
		if !ok[r] && r != '\n' {
			all = false
			break
		}
	}
	if all {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch sub, has := glyphSubstitutes[r]; {
		case ok[r] || r == '\n':
			b.WriteRune(r)
		case has:
			b.WriteString(sub)
		case unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Variation_Selector, r):
		default:
			d.out.nDrop++
			if len(d.out.dropped) < 8 && !slices.Contains(d.out.dropped, r) {
				d.out.dropped = append(d.out.dropped, r)
			}
		}
	}
	return b.String()
}

// expandTabs replaces tabs with spaces to the next multiple of four columns, as editors show code.
func expandTabs(code string) string {
	if !strings.Contains(code, "\t") {
		return code
	}
	var b strings.Builder
	col := 0
	for _, r := range code {
		switch r {
		case '\t':
			n := 4 - col%4
			b.WriteString(strings.Repeat(" ", n))
			col += n
		case '\n':
			b.WriteRune(r)
			col = 0
		default:
			b.WriteRune(r)
			col++
		}
	}
	return b.String()
}

func (d *pdfDoc) font() {
	style := ""
	if d.bold > 0 {
		style += "B"
	}
	if d.italic > 0 {
		style += "I"
	}
	if d.code {
		d.pdf.SetFont(fontMono, "", d.size*0.95)
		return
	}
	d.pdf.SetFont(fontSans, style, d.size)
}

// blocks renders the block children of n, indented by indent millimetres.
func (d *pdfDoc) blocks(n ast.Node, src []byte, indent float64) {
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		d.block(c, src, indent)
	}
}

func (d *pdfDoc) block(n ast.Node, src []byte, indent float64) {
	p := d.pdf
	switch b := n.(type) {
	case *ast.Heading:
		sizes := map[int]float64{1: 17, 2: 14, 3: 12.5}
		d.size = sizes[b.Level]
		if d.size == 0 {
			d.size = 11.5
		}
		p.Ln(2)
		d.bold++
		d.inline(b, src, indent, d.size*0.55)
		d.bold--
		d.size = bodySize
		p.Ln(2)
	case *ast.Paragraph, *ast.TextBlock:
		d.inline(n, src, indent, d.lineH)
		p.Ln(2)
	case *ast.List:
		num := b.Start
		for item := b.FirstChild(); item != nil; item = item.NextSibling() {
			marker := "•"
			if b.IsOrdered() {
				marker = fmt.Sprintf("%d.", num)
				num++
			}
			p.SetX(d.left + indent)
			d.font()
			p.CellFormat(6, d.lineH, marker, "", 0, "L", false, 0, "")
			first := true
			for c := item.FirstChild(); c != nil; c = c.NextSibling() {
				if !first {
					p.SetX(d.left + indent + 6)
				}
				switch c.(type) {
				case *ast.Paragraph, *ast.TextBlock:
					d.inlineAt(c, src, indent+6, d.lineH, !first)
					p.Ln(d.lineH)
				default:
					if first {
						p.Ln(d.lineH)
					}
					d.block(c, src, indent+6)
				}
				first = false
			}
		}
		p.Ln(1)
	case *ast.FencedCodeBlock, *ast.CodeBlock:
		var code strings.Builder
		lines := n.Lines()
		for i := 0; i < lines.Len(); i++ {
			seg := lines.At(i)
			code.Write(seg.Value(src))
		}
		p.SetFillColor(244, 244, 244)
		p.SetFont(fontMono, "", 9)
		p.SetX(d.left + indent)
		p.MultiCell(d.width-indent, 4.6, d.clean(expandTabs(strings.TrimRight(code.String(), "\n"))), "", "L", true)
		p.Ln(2)
	case *ast.Blockquote:
		y := p.GetY()
		d.italic++
		d.blocks(b, src, indent+6)
		d.italic--
		p.SetDrawColor(190, 190, 190)
		p.SetLineWidth(0.8)
		p.Line(d.left+indent+2, y, d.left+indent+2, p.GetY()-2)
		p.SetLineWidth(0.2)
		p.SetDrawColor(0, 0, 0)
	case *ast.ThematicBreak:
		y := p.GetY() + 2
		p.SetDrawColor(180, 180, 180)
		p.Line(d.left, y, d.left+d.width, y)
		p.SetDrawColor(0, 0, 0)
		p.Ln(5)
	case *extast.Table:
		d.table(b, src, indent)
	case *ast.HTMLBlock:
		// Raw HTML is not rendered (and not shown as markup either).
	default:
		if n.HasChildren() {
			d.blocks(n, src, indent)
		}
	}
}

// inline writes a paragraph's inline content, wrapping within the page.
func (d *pdfDoc) inline(n ast.Node, src []byte, indent, lineH float64) {
	d.inlineAt(n, src, indent, lineH, false)
	d.pdf.Ln(lineH)
}

func (d *pdfDoc) inlineAt(n ast.Node, src []byte, indent, lineH float64, continued bool) {
	p := d.pdf
	if !continued {
		p.SetX(d.left + indent)
	}
	l, t, r, b := p.GetMargins()
	p.SetLeftMargin(d.left + indent) // so that wrapped lines keep the indent
	defer p.SetMargins(l, t, r)
	_ = b
	d.inlines(n, src, lineH)
}

func (d *pdfDoc) inlines(n ast.Node, src []byte, lineH float64) {
	p := d.pdf
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		switch x := c.(type) {
		case *ast.Text:
			d.font()
			s := string(x.Segment.Value(src))
			if x.SoftLineBreak() {
				s += " "
			}
			p.Write(lineH, d.clean(s))
			if x.HardLineBreak() {
				p.Ln(lineH)
			}
		case *ast.String:
			d.font()
			p.Write(lineH, d.clean(string(x.Value)))
		case *ast.CodeSpan:
			d.code = true
			d.font()
			var b strings.Builder
			for cc := x.FirstChild(); cc != nil; cc = cc.NextSibling() {
				if t, ok := cc.(*ast.Text); ok {
					b.Write(t.Segment.Value(src))
				}
			}
			p.Write(lineH, d.clean(b.String()))
			d.code = false
		case *ast.Emphasis:
			if x.Level >= 2 {
				d.bold++
			} else {
				d.italic++
			}
			d.inlines(x, src, lineH)
			if x.Level >= 2 {
				d.bold--
			} else {
				d.italic--
			}
		case *ast.Link:
			p.SetTextColor(30, 80, 160)
			d.inlines(x, src, lineH)
			p.SetTextColor(0, 0, 0)
			dest := string(x.Destination)
			if dest != "" && !strings.Contains(nodeText(x, src), dest) {
				d.font()
				p.Write(lineH, d.clean(" ("+dest+")"))
			}
		case *ast.AutoLink:
			d.font()
			p.Write(lineH, d.clean(string(x.URL(src))))
		case *ast.Image:
			d.image(string(x.Destination), nodeText(x, src))
		case *extast.Strikethrough:
			d.inlines(x, src, lineH)
		case *ast.RawHTML:
		default:
			d.inlines(c, src, lineH)
		}
	}
}

// image embeds a workspace PNG or JPEG at the text width (or its own, if smaller), with its caption.
func (d *pdfDoc) image(dest, caption string) {
	p := d.pdf
	data, err := d.images(dest)
	var cfg image.Config
	var format string
	if err == nil {
		cfg, format, err = image.DecodeConfig(bytes.NewReader(data))
	}
	if err != nil || (format != "png" && format != "jpeg") {
		d.out.missing = append(d.out.missing, dest)
		d.font()
		p.Write(d.lineH, d.clean("[image "+dest+" could not be included]"))
		return
	}
	d.nImages++
	name := fmt.Sprintf("img%d", d.nImages)
	p.RegisterImageOptionsReader(name, fpdf.ImageOptions{ImageType: strings.ToUpper(format)}, bytes.NewReader(data))
	w := d.width
	if px := float64(cfg.Width) * 25.4 / 96; px < w {
		w = px
	}
	h := w * float64(cfg.Height) / float64(cfg.Width)
	p.Ln(d.lineH)
	p.ImageOptions(name, d.left, p.GetY(), w, h, true, fpdf.ImageOptions{ImageType: strings.ToUpper(format)}, 0, "")
	if caption != "" {
		p.SetFont(fontSans, "I", 9)
		p.MultiCell(w, 4.5, d.clean(caption), "", "C", false)
	}
}

// table lays out a GitHub table: columns share the width by their content, cells wrap and keep
// their column's alignment (| ---: |), the header is bold on a light fill.
func (d *pdfDoc) table(t *extast.Table, src []byte, indent float64) {
	p := d.pdf
	var rows [][]string
	align := map[int]string{}
	header := 0
	for r := t.FirstChild(); r != nil; r = r.NextSibling() {
		var row []string
		for c := r.FirstChild(); c != nil; c = c.NextSibling() {
			if cell, ok := c.(*extast.TableCell); ok {
				align[len(row)] = map[extast.Alignment]string{extast.AlignRight: "R", extast.AlignCenter: "C"}[cell.Alignment]
			}
			row = append(row, d.clean(strings.TrimSpace(nodeText(c, src))))
		}
		if _, ok := r.(*extast.TableHeader); ok {
			header = 1
		}
		rows = append(rows, row)
	}
	cols := 0
	for _, r := range rows {
		cols = max(cols, len(r))
	}
	if cols == 0 {
		return
	}
	width := d.width - indent
	p.SetFont(fontSans, "", 9)
	weights := make([]float64, cols)
	total := 0.0
	for ci := 0; ci < cols; ci++ {
		longest := 4.0
		for _, r := range rows {
			if ci < len(r) {
				longest = max(longest, min(p.GetStringWidth(r[ci]), width/2))
			}
		}
		weights[ci] = longest
		total += longest
	}
	widths := make([]float64, cols)
	for ci := range weights {
		widths[ci] = width * weights[ci] / total
	}
	const lh = 4.8
	for ri, r := range rows {
		style := ""
		if ri < header {
			style = "B"
			p.SetFillColor(225, 232, 244)
		}
		p.SetFont(fontSans, style, 9)
		lines := 1
		split := make([][]string, cols)
		for ci := 0; ci < cols; ci++ {
			cell := ""
			if ci < len(r) {
				cell = r[ci]
			}
			split[ci] = p.SplitText(cell, widths[ci]-2)
			lines = max(lines, len(split[ci]))
		}
		h := float64(lines)*lh + 1.5
		_, pageH := p.GetPageSize()
		if p.GetY()+h > pageH-20 {
			p.AddPage()
		}
		x, y := d.left+indent, p.GetY()
		for ci := 0; ci < cols; ci++ {
			p.Rect(x, y, widths[ci], h, map[bool]string{true: "FD", false: "D"}[ri < header])
			for li, line := range split[ci] {
				p.SetXY(x+1, y+0.8+float64(li)*lh)
				p.CellFormat(widths[ci]-2, lh, line, "", 0, cmp.Or(align[ci], "L"), false, 0, "")
			}
			x += widths[ci]
		}
		p.SetXY(d.left+indent, y+h)
	}
	p.Ln(3)
}

// nodeText is the plain text of a node's inline content.
func nodeText(n ast.Node, src []byte) string {
	var b strings.Builder
	_ = ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch x := c.(type) {
		case *ast.Text:
			b.Write(x.Segment.Value(src))
			if x.SoftLineBreak() {
				b.WriteByte(' ')
			}
		case *ast.String:
			b.Write(x.Value)
		}
		return ast.WalkContinue, nil
	})
	return b.String()
}
