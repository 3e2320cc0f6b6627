package tools

import (
	"bytes"
	"context"
	"fmt"
	"image"
	_ "image/jpeg" // workspace images embedded in a PDF
	_ "image/png"
	"io"
	"strings"
	"time"

	"github.com/go-pdf/fpdf"
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
)

// The PDF renderer: Markdown (goldmark, with GitHub tables) laid out with fpdf in the Go fonts, which
// are embedded in the binary (BSD-licensed, covering Latin, Greek and Cyrillic), so a PDF needs
// nothing installed and shows accented and non-Latin text.

type generatePDFArgs struct {
	Filename string `json:"filename"`
	Title    string `json:"title"`
	Markdown string `json:"markdown"`
}

func (a *generatePDFArgs) filePath() string { return a.Filename }

func (r *Registry) generatePDF(ctx context.Context, e entry, inv Invocation) (Output, error) {
	var args generatePDFArgs
	rel, err := decodePath(e, inv, GeneratePDF, false, &args)
	if err != nil {
		return Output{}, err
	}
	rel = withExt(rel, ".pdf")
	if strings.TrimSpace(args.Markdown) == "" {
		return Output{}, argErrorf(GeneratePDF, "\"markdown\" is blank: give the document's content")
	}
	root, err := r.workspace(inv.Team)
	if err != nil {
		return Output{}, err
	}
	images := func(p string) ([]byte, error) {
		clean, err := cleanPath(GeneratePDF, p, false)
		if err != nil {
			return nil, err
		}
		f, err := root.Open(clean)
		if err != nil {
			return nil, fmt.Errorf("%s is not a file of the workspace", p)
		}
		defer f.Close()
		return io.ReadAll(io.LimitReader(f, MaxFileBytes*4))
	}
	data, pages, err := renderPDF(args.Title, args.Markdown, images, r.now())
	root.Close()
	if err != nil {
		return Output{}, err
	}
	if len(data) > MaxFileBytes*4 {
		return Output{}, argErrorf(GeneratePDF, "the PDF would be %s; the limit is 4 MB: use fewer or smaller images", humanBytes(int64(len(data))))
	}
	shape := fmt.Sprintf("%d page(s), %s", pages, humanBytes(int64(len(data))))
	return r.saveAndShare(ctx, inv, GeneratePDF, rel, data, shape, "exactly this content")
}

// pdfDoc lays out one document.
type pdfDoc struct {
	pdf    *fpdf.Fpdf
	images func(string) ([]byte, error)
	width  float64 // text width
	left   float64
	// style is the inline style stack while writing a paragraph ("", "B", "I", "BI").
	bold, italic int
	code         bool
	size         float64
	lineH        float64
	nImages      int
	missing      []string
}

const (
	fontSans = "Go"
	fontMono = "GoMono"
	bodySize = 10.5
)

// renderPDF renders Markdown to PDF bytes and returns the page count.
func renderPDF(title, markdown string, images func(string) ([]byte, error), now time.Time) ([]byte, int, error) {
	pdf := fpdf.New("P", "mm", "A4", "")
	pdf.AddUTF8FontFromBytes(fontSans, "", goregular.TTF)
	pdf.AddUTF8FontFromBytes(fontSans, "B", gobold.TTF)
	pdf.AddUTF8FontFromBytes(fontSans, "I", goitalic.TTF)
	pdf.AddUTF8FontFromBytes(fontSans, "BI", gobolditalic.TTF)
	pdf.AddUTF8FontFromBytes(fontMono, "", gomono.TTF)
	pdf.SetMargins(18, 18, 18)
	pdf.SetAutoPageBreak(true, 18)
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
	pdf.AddPage()
	w, _ := pdf.GetPageSize()
	l, _, rm, _ := pdf.GetMargins()
	d := &pdfDoc{pdf: pdf, images: images, width: w - l - rm, left: l, size: bodySize, lineH: 5.4}
	if title != "" {
		pdf.SetFont(fontSans, "B", 20)
		pdf.MultiCell(0, 9, title, "", "L", false)
		pdf.Ln(3)
	}
	src := []byte(markdown)
	md := goldmark.New(goldmark.WithExtensions(extension.Table, extension.Strikethrough))
	doc := md.Parser().Parse(text.NewReader(src))
	d.blocks(doc, src, 0)
	if err := pdf.Error(); err != nil {
		return nil, 0, fmt.Errorf("%s: lay out the PDF: %w", GeneratePDF, err)
	}
	var buf bytes.Buffer
	if err := pdf.Output(&buf); err != nil {
		return nil, 0, fmt.Errorf("%s: write the PDF: %w", GeneratePDF, err)
	}
	return buf.Bytes(), pdf.PageNo(), nil
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
		p.MultiCell(d.width-indent, 4.6, strings.TrimRight(code.String(), "\n"), "", "L", true)
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
			p.Write(lineH, s)
			if x.HardLineBreak() {
				p.Ln(lineH)
			}
		case *ast.String:
			d.font()
			p.Write(lineH, string(x.Value))
		case *ast.CodeSpan:
			d.code = true
			d.font()
			var b strings.Builder
			for cc := x.FirstChild(); cc != nil; cc = cc.NextSibling() {
				if t, ok := cc.(*ast.Text); ok {
					b.Write(t.Segment.Value(src))
				}
			}
			p.Write(lineH, b.String())
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
				p.Write(lineH, " ("+dest+")")
			}
		case *ast.AutoLink:
			d.font()
			p.Write(lineH, string(x.URL(src)))
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
		d.missing = append(d.missing, dest)
		d.font()
		p.Write(d.lineH, "[image "+dest+" could not be included]")
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
		p.MultiCell(w, 4.5, caption, "", "C", false)
	}
}

// table lays out a GitHub table: columns share the width by their content, cells wrap, the header
// is bold on a light fill.
func (d *pdfDoc) table(t *extast.Table, src []byte, indent float64) {
	p := d.pdf
	var rows [][]string
	header := 0
	for r := t.FirstChild(); r != nil; r = r.NextSibling() {
		var row []string
		for c := r.FirstChild(); c != nil; c = c.NextSibling() {
			row = append(row, strings.TrimSpace(nodeText(c, src)))
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
				p.CellFormat(widths[ci]-2, lh, line, "", 0, "L", false, 0, "")
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
