// Package documents holds the tools that generate files for people: CSV files, Excel workbooks,
// charts (PNG) and PDF reports from Markdown. Each is written in the team's workspace and shared in the
// conversation's thread through the files domain (files.Workspace.SaveAndShare), which also applies
// the rules of replacing a file. It also reads documents' text back (extract.go: PDF, Word, Excel,
// CSV, text), for the search over a team's files (tools/filesearch). It is its own package because
// its libraries (excelize, charts, fpdf, the PDF reader, goldmark and the embedded fonts) are needed
// by no other tool.
package documents

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-analyze/charts"
	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/tools/files"
	"github.com/xuri/excelize/v2"
)

// Generator makes the documents: it writes and shares them through the workspace, and dates the PDFs
// by its clock.
type Generator struct {
	ws  *files.Workspace
	now func() time.Time
}

// New returns the document tools' domain over ws, with now as the clock (nil: time.Now).
func New(ws *files.Workspace, now func() time.Time) *Generator {
	if now == nil {
		now = time.Now
	}
	return &Generator{ws: ws, now: now}
}

// Document tool names.
const (
	GenerateExcel = "lucy_generate_excel"
	GeneratePDF   = "lucy_generate_pdf"
	GenerateChart = "lucy_generate_chart"
)

// Limits of the document tools.
const (
	MaxCSVRows       = 10_000 // rows per lucy_generate_csv call
	MaxSheets        = 20
	MaxExcelCells    = 200_000
	MaxMarkdownChars = 200_000
	MaxChartPoints   = 1_000
	MaxChartSeries   = 12
	chartWidth       = 900
	chartHeight      = 540
)

// withExt adds ext to a workspace path that lacks it.
func withExt(rel, ext string) string {
	if !strings.EqualFold(path.Ext(rel), ext) {
		return rel + ext
	}
	return rel
}

var _ = tools.Register(tools.Def{
	Spec: tools.Spec{
		Name: GenerateExcel,
		Description: "Create an Excel workbook (.xlsx) with one or more sheets, save it in the team's workspace and " +
			"share it in the current thread. Each sheet is rows of cells; the first row is the header (bold, " +
			"filled, frozen). A cell is a string, a number, true/false or null (empty); a string starting with " +
			"\"=\" is a formula (e.g. \"=SUM(B2:B9)\"), a string like \"2026-03-31\" or \"2026-03-31T14:00:00Z\" " +
			"is a date; a leading apostrophe keeps such a string as text (\"'=x\" shows =x). Replacing an existing " +
			"file with different content waits for a person's approval.",
		Human: "creating a spreadsheet",
		Long:  true,
	},
	Required: []string{"filename", "sheets"},
	Props: func() []tools.Prop {
		return []tools.Prop{
			tools.StrProp("filename", "File name, e.g. \"q3-report.xlsx\" (\".xlsx\" is added if missing); may include folders.", 1, tools.MaxPathLen),
			tools.Prop{Name: "sheets", Schema: map[string]any{
				"type": "array", "description": "The sheets, in order.", "minItems": 1, "maxItems": MaxSheets,
				"items": map[string]any{
					"type": "object", "additionalProperties": false, "required": []string{"name", "rows"},
					"properties": map[string]any{
						"name": map[string]any{"type": "string", "description": "Sheet name: up to 31 characters, none of : \\ / ? * [ ].", "minLength": 1, "maxLength": 31},
						"rows": map[string]any{
							"type": "array", "description": "Rows of cells; the first is the header.", "minItems": 1,
							"items": map[string]any{"type": "array", "items": map[string]any{"type": []string{"string", "number", "boolean", "null"}}},
						},
					},
				},
			}},
		}
	},
}, (*Generator).generateExcel)

type generateExcelArgs struct {
	Filename string `json:"filename"`
	Sheets   []struct {
		Name string              `json:"name"`
		Rows [][]json.RawMessage `json:"rows"`
	} `json:"sheets"`
}

func (a *generateExcelArgs) FilePath() string { return a.Filename }

func (g *Generator) generateExcel(ctx context.Context, inv tools.Invocation) (tools.Output, error) {
	var args generateExcelArgs
	rel, err := files.DecodePath(inv, GenerateExcel, false, &args)
	if err != nil {
		return tools.Output{}, err
	}
	rel = withExt(rel, ".xlsx")
	cells, seen := 0, map[string]bool{}
	for _, sh := range args.Sheets {
		if err := checkSheetName(sh.Name); err != nil {
			return tools.Output{}, tools.ArgErrorf(GenerateExcel, "sheet name %q: %v", sh.Name, err)
		}
		if seen[strings.ToLower(sh.Name)] {
			return tools.Output{}, tools.ArgErrorf(GenerateExcel, "two sheets are named %q; sheet names must differ", sh.Name)
		}
		seen[strings.ToLower(sh.Name)] = true
		for ri, row := range sh.Rows {
			if len(row) > excelize.MaxColumns {
				return tools.Output{}, tools.ArgErrorf(GenerateExcel, "sheet %q, row %d has %d cells; a sheet has at most %d columns", sh.Name, ri+1, len(row), excelize.MaxColumns)
			}
			cells += max(1, len(row)) // an empty row counts as one, so that rows are bounded too
		}
	}
	if cells > MaxExcelCells {
		return tools.Output{}, tools.ArgErrorf(GenerateExcel, "%d cells; the limit is %d: split the data into several workbooks", cells, MaxExcelCells)
	}
	data, err := buildWorkbook(args)
	if err != nil {
		return tools.Output{}, err
	}
	if len(data) > tools.MaxFileBytes {
		return tools.Output{}, tools.ArgErrorf(GenerateExcel, "the workbook would be %s; the limit is 1 MB: split the data", files.HumanBytes(int64(len(data))))
	}
	names := make([]string, len(args.Sheets))
	for i, sh := range args.Sheets {
		names[i] = fmt.Sprintf("%s (%d rows)", sh.Name, len(sh.Rows))
	}
	shape := fmt.Sprintf("sheets %s, %s", strings.Join(names, ", "), files.HumanBytes(int64(len(data))))
	return g.ws.SaveAndShare(ctx, inv, GenerateExcel, rel, data, shape, "exactly this content")
}

// checkSheetName applies Excel's rules: 1 to 31 characters, none of: \ / ? * [ ], not starting or
// ending with an apostrophe.
func checkSheetName(name string) error {
	switch {
	case strings.TrimSpace(name) == "":
		return fmt.Errorf("a sheet needs a name")
	case len([]rune(name)) > 31:
		return fmt.Errorf("at most 31 characters")
	case strings.ContainsAny(name, ":\\/?*[]"):
		return fmt.Errorf("it may not contain any of : \\ / ? * [ ]")
	case strings.HasPrefix(name, "'") || strings.HasSuffix(name, "'"):
		return fmt.Errorf("it may not start or end with an apostrophe")
	case strings.EqualFold(name, "History"):
		return fmt.Errorf("the name History is reserved by Excel")
	}
	return nil
}

// buildWorkbook writes the sheets with typed cells, a styled and frozen header, and column widths
// that fit the content.
func buildWorkbook(args generateExcelArgs) ([]byte, error) {
	f := excelize.NewFile()
	defer f.Close()
	header, err := f.NewStyle(&excelize.Style{
		Font:   &excelize.Font{Bold: true, Color: "FFFFFF"},
		Fill:   excelize.Fill{Type: "pattern", Color: []string{"305496"}, Pattern: 1},
		Border: []excelize.Border{{Type: "bottom", Color: "1F3864", Style: 2}},
	})
	if err != nil {
		return nil, err
	}
	dateFmt := "yyyy-mm-dd"
	dateStyle, err := f.NewStyle(&excelize.Style{CustomNumFmt: &dateFmt})
	if err != nil {
		return nil, err
	}
	timeFmt := "yyyy-mm-dd hh:mm"
	timeStyle, err := f.NewStyle(&excelize.Style{CustomNumFmt: &timeFmt})
	if err != nil {
		return nil, err
	}
	for i, sh := range args.Sheets {
		name := sh.Name
		if i == 0 {
			if err := f.SetSheetName("Sheet1", name); err != nil {
				return nil, err
			}
		} else if _, err := f.NewSheet(name); err != nil {
			return nil, err
		}
		widths := map[int]int{}
		cols := 0
		for ri, row := range sh.Rows {
			cols = max(cols, len(row))
			for ci, raw := range row {
				cell, err := excelize.CoordinatesToCellName(ci+1, ri+1)
				if err != nil {
					return nil, err
				}
				shown, err := setCell(f, name, cell, raw, dateStyle, timeStyle)
				if err != nil {
					return nil, tools.ArgErrorf(GenerateExcel, "sheet %q, cell %s: %v", name, cell, err)
				}
				widths[ci] = max(widths[ci], len([]rune(shown)))
			}
		}
		if cols > 0 && len(sh.Rows) > 0 {
			last, _ := excelize.CoordinatesToCellName(cols, 1)
			if err := f.SetCellStyle(name, "A1", last, header); err != nil {
				return nil, err
			}
			if err := f.SetPanes(name, &excelize.Panes{Freeze: true, YSplit: 1, TopLeftCell: "A2", ActivePane: "bottomLeft"}); err != nil {
				return nil, err
			}
		}
		for ci := 0; ci < cols; ci++ {
			col, _ := excelize.ColumnNumberToName(ci + 1)
			w := math.Min(60, math.Max(8, float64(widths[ci])+2))
			if err := f.SetColWidth(name, col, col, w); err != nil {
				return nil, err
			}
		}
	}
	var buf bytes.Buffer
	if err := f.Write(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// setCell writes one JSON cell with its type and returns how it reads (for the column width).
func setCell(f *excelize.File, sheet, cell string, raw json.RawMessage, dateStyle, timeStyle int) (string, error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return "", err
	}
	switch x := v.(type) {
	case nil:
		return "", nil
	case bool:
		return fmt.Sprint(x), f.SetCellBool(sheet, cell, x)
	case float64:
		return fmt.Sprint(x), f.SetCellFloat(sheet, cell, x, -1, 64)
	case string:
		// excelize would cut a longer text silently; Excel refuses longer formulas.
		if n := utf8.RuneCountInString(x); n > excelize.TotalCellChars {
			return "", fmt.Errorf("%d characters; a cell holds at most %d", n, excelize.TotalCellChars)
		} else if strings.HasPrefix(x, "=") && n > 8192 {
			return "", fmt.Errorf("a formula of %d characters; Excel takes at most 8192", n)
		}
		switch {
		case strings.HasPrefix(x, "'") && (strings.HasPrefix(x[1:], "=") || isDate(x[1:]) || isDateTime(x[1:])):
			// Excel's own escape: a leading apostrophe keeps "=…" or a date as text.
			return x[1:], f.SetCellStr(sheet, cell, x[1:])
		case strings.HasPrefix(x, "=") && len(x) > 1:
			return x, f.SetCellFormula(sheet, cell, x[1:])
		case isDate(x):
			t, _ := time.Parse(time.DateOnly, x)
			if err := f.SetCellValue(sheet, cell, t); err != nil {
				return "", err
			}
			return x, f.SetCellStyle(sheet, cell, cell, dateStyle)
		case isDateTime(x):
			t, _ := time.Parse(time.RFC3339, x)
			if err := f.SetCellValue(sheet, cell, t.UTC()); err != nil {
				return "", err
			}
			return x, f.SetCellStyle(sheet, cell, cell, timeStyle)
		}
		return x, f.SetCellStr(sheet, cell, x)
	}
	return "", fmt.Errorf("a cell must be a string, number, true/false or null")
}

func isDate(s string) bool {
	_, err := time.Parse(time.DateOnly, s)
	return len(s) == 10 && err == nil
}

func isDateTime(s string) bool {
	_, err := time.Parse(time.RFC3339, s)
	return err == nil
}

type chartSeries struct {
	Name   string    `json:"name"`
	Values []float64 `json:"values"`
}

var _ = tools.Register(tools.Def{
	Spec: tools.Spec{
		Name: GenerateChart,
		Description: "Draw a bar, line or pie chart as a PNG image, save it in the team's workspace and share it in " +
			"the current thread. Give labels (x-axis categories, or pie slices) and one or more series of numbers, " +
			"one number per label (a pie takes exactly one series). The PNG can then go into a PDF with " +
			"lucy_generate_pdf (`![title](path.png)`).",
		Human: "drawing a chart",
		Long:  true,
	},
	Required: []string{"filename", "type", "labels", "series"},
	Props: func() []tools.Prop {
		return []tools.Prop{
			tools.StrProp("filename", "File name, e.g. \"charts/signups.png\" (\".png\" is added if missing).", 1, tools.MaxPathLen),
			tools.EnumProp("type", "The kind of chart.", "bar", "line", "pie"),
			tools.StrProp("title", "The chart's title.", 0, 200),
			tools.StrProp("x_title", "What the x axis shows, e.g. \"Week\" (bar and line).", 0, 100),
			tools.StrProp("y_title", "What the y axis shows, e.g. \"Signups\" (bar and line).", 0, 100),
			tools.Prop{Name: "labels", Schema: map[string]any{"type": "array", "description": "Category labels, one per value.",
				"minItems": 1, "maxItems": MaxChartPoints, "items": map[string]any{"type": "string", "maxLength": 100}}},
			tools.Prop{Name: "series", Schema: map[string]any{
				"type": "array", "description": "Data series, each with a name and one value per label.", "minItems": 1, "maxItems": MaxChartSeries,
				"items": map[string]any{
					"type": "object", "additionalProperties": false, "required": []string{"name", "values"},
					"properties": map[string]any{
						"name":   map[string]any{"type": "string", "description": "The series' name for the legend (\"\" for none).", "maxLength": 100},
						"values": map[string]any{"type": "array", "minItems": 1, "maxItems": MaxChartPoints, "items": map[string]any{"type": "number"}},
					},
				},
			}},
		}
	},
}, (*Generator).generateChart)

type generateChartArgs struct {
	Filename string        `json:"filename"`
	Type     string        `json:"type"`
	Title    string        `json:"title"`
	XTitle   string        `json:"x_title"`
	YTitle   string        `json:"y_title"`
	Labels   []string      `json:"labels"`
	Series   []chartSeries `json:"series"`
}

func (a *generateChartArgs) FilePath() string { return a.Filename }

func (g *Generator) generateChart(ctx context.Context, inv tools.Invocation) (tools.Output, error) {
	var args generateChartArgs
	rel, err := files.DecodePath(inv, GenerateChart, false, &args)
	if err != nil {
		return tools.Output{}, err
	}
	rel = withExt(rel, ".png")
	data, err := drawChart(args)
	if err != nil {
		return tools.Output{}, err
	}
	shape := fmt.Sprintf("%s chart, %d labels, %d series, %dx%d PNG", args.Type, len(args.Labels), len(args.Series), chartWidth, chartHeight)
	return g.ws.SaveAndShare(ctx, inv, GenerateChart, rel, data, shape, "exactly this chart")
}

// drawChart renders the chart as PNG, after checking that the data fits the labels. Axis titles are
// drawn beside their axes; a bar chart's value axis starts at zero when no value is negative, since
// bars whose length does not start at zero mislead; pie slices are labelled with their label and
// share.
func drawChart(args generateChartArgs) ([]byte, error) {
	for i, s := range args.Series {
		if len(s.Values) != len(args.Labels) {
			return nil, tools.ArgErrorf(GenerateChart, "series %d (%q) has %d values for %d labels: give one value per label", i+1, s.Name, len(s.Values), len(args.Labels))
		}
		for _, v := range s.Values {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, tools.ArgErrorf(GenerateChart, "series %d has a value that is not a number", i+1)
			}
		}
	}
	theme := charts.GetTheme(charts.ThemeLight)
	p := charts.NewPainter(charts.PainterOptions{OutputFormat: charts.ChartOutputPNG, Width: chartWidth, Height: chartHeight, Theme: theme})
	padding := charts.Box{Top: 20, Left: 20, Right: 30, Bottom: 20}
	title := charts.TitleOption{Text: args.Title, Offset: charts.OffsetStr{Left: charts.PositionCenter},
		FontStyle: charts.FontStyle{FontSize: 18}}
	names := make([]string, len(args.Series))
	for i, s := range args.Series {
		names[i] = s.Name
	}
	var err error
	switch args.Type {
	case "pie":
		if len(args.Series) != 1 {
			return nil, tools.ArgErrorf(GenerateChart, "a pie chart takes exactly one series (got %d)", len(args.Series))
		}
		sum := 0.0
		for _, v := range args.Series[0].Values {
			if v < 0 {
				return nil, tools.ArgErrorf(GenerateChart, "a pie chart cannot show negative values")
			}
			sum += v
		}
		if sum == 0 {
			return nil, tools.ArgErrorf(GenerateChart, "a pie chart needs at least one value above zero")
		}
		err = p.PieChart(charts.PieChartOption{
			Padding:    padding,
			Title:      title,
			SeriesList: charts.NewSeriesListPie(args.Series[0].Values, charts.PieSeriesOption{Names: args.Labels}),
			Legend:     charts.LegendOption{SeriesNames: args.Labels, Offset: charts.OffsetStr{Top: charts.PositionBottom}},
		})
	case "bar", "line":
		values := make([][]float64, len(args.Series))
		allPositive := true
		for i, s := range args.Series {
			values[i] = s.Values
			for _, v := range s.Values {
				allPositive = allPositive && v >= 0
			}
		}
		// One unnamed series needs no legend; several do, so unnamed ones get a name.
		legend := charts.LegendOption{Show: charts.Ptr(false)}
		if len(args.Series) > 1 || names[0] != "" {
			for i := range names {
				if names[i] == "" {
					names[i] = fmt.Sprintf("Series %d", i+1)
				}
			}
			legend = charts.LegendOption{SeriesNames: names, Offset: charts.OffsetStr{Top: charts.PositionBottom}}
		}
		category := charts.CategoryAxisOption{Labels: args.Labels, Title: args.XTitle}
		value := charts.ValueAxisOption{Title: args.YTitle}
		if args.Type == "bar" {
			if top := maxValue(values); allPositive && top > 0 {
				step := niceStep(top / 6)
				value.Min, value.Max = charts.Ptr(0.0), charts.Ptr(math.Ceil(top/step)*step)
				value.LabelCount = int(math.Round(*value.Max/step)) + 1
			}
			err = p.BarChart(charts.BarChartOption{
				Padding: padding, Title: title, Legend: legend, CategoryAxis: category,
				ValueAxis:  []charts.ValueAxisOption{value},
				SeriesList: charts.NewSeriesListBar(values, charts.BarSeriesOption{Names: names}),
			})
		} else {
			err = p.LineChart(charts.LineChartOption{
				Padding: padding, Title: title, Legend: legend, XAxis: category,
				YAxis:      []charts.ValueAxisOption{value},
				SeriesList: charts.NewSeriesListLine(values, charts.LineSeriesOption{Names: names}),
			})
		}
	default:
		return nil, tools.ArgErrorf(GenerateChart, "unknown chart type %q: use bar, line or pie", args.Type)
	}
	if err != nil {
		return nil, tools.ArgErrorf(GenerateChart, "the chart could not be drawn: %v", err)
	}
	return p.Bytes()
}

func maxValue(values [][]float64) float64 {
	top := math.Inf(-1)
	for _, vs := range values {
		for _, v := range vs {
			top = max(top, v)
		}
	}
	return top
}

// niceStep rounds an axis step up to 1, 2, 2.5 or 5 times a power of ten, so that the labels of an
// axis forced to start at zero read as round numbers (the library picks round steps only for the
// ranges it chooses itself).
func niceStep(raw float64) float64 {
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 2.5, 5} {
		if m*mag >= raw {
			return m * mag
		}
	}
	return 10 * mag
}
