package render

// pageHTML is the page skeleton for html/template. Layout: tables scroll
// sideways in their own wrapper rather than widening the page, charts
// scale to their column (one column at 400 pixels, several on a wide
// window), and print puts it on A4 with no chart split across pages and
// the charts' data tables opened.
const pageHTML = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="orchstat">
<title>{{.Title}}</title>
<style>
` + pageCSS + `</style>
</head>
<body>
<header>
<h1>{{.Title}}</h1>
{{range .Lines}}<p class="scope">{{.}}</p>
{{end}}</header>
{{.Summary}}{{with .Lead}}<div class="lead">{{template "figure" .}}</div>
{{end}}{{if .Sections}}<nav aria-label="Sections"><ul>
{{range .Sections}}{{if not .Sub}}<li><a href="#{{.ID}}">{{.Title}}</a></li>
{{end}}{{end}}</ul></nav>
{{end}}<main>
{{range .Sections}}<section id="{{.ID}}" aria-labelledby="{{.ID}}-h">
{{if .Sub}}<h3 id="{{.ID}}-h">{{.Title}}</h3>{{else}}<h2 id="{{.ID}}-h">{{.Title}}</h2>{{end}}
{{range .Blocks}}{{template "block" .}}{{end}}</section>
{{end}}</main>
{{if .Footer}}<footer>
{{range .Footer}}<p>{{.}}</p>
{{end}}</footer>
{{end}}</body>
</html>
{{define "block"}}{{if .Figures}}<div class="figs">
{{range .Figures}}{{template "figure" .}}{{end}}</div>
{{end}}{{with .Table}}{{template "table" .}}{{end}}{{with .Text}}<p>{{.}}</p>
{{end}}{{end}}
{{define "figure"}}<figure>
<figcaption>{{.Caption}}{{with .Note}} <span class="note">{{.}}</span>{{end}}</figcaption>
{{if .Empty}}<p class="none">{{.Empty}}</p>
{{else}}{{.SVG}}{{end}}{{if .Table}}<details><summary>Data table<span class="vh"> of {{.Caption}}</span></summary>
{{template "table" .Table}}</details>
{{end}}</figure>
{{end}}
{{define "table"}}{{if .Rows}}<div class="wrap"><table>
{{with .Caption}}<caption>{{.}}</caption>
{{end}}<thead><tr>{{range .Head}}<th scope="col"{{if .Numeric}} class="n"{{end}}>{{.Text}}</th>{{end}}</tr></thead>
<tbody>
{{range .Rows}}<tr{{if .Alert}} class="alert"{{end}}{{template "data" .Data}}>{{range $i, $c := .Cells}}{{if eq $i 0}}<th scope="row"{{if .Numeric}} class="n"{{end}}{{template "data" .Data}}>{{template "text" .}}</th>{{else}}<td{{if .Numeric}} class="n"{{end}}{{with .Title}} title="{{.}}"{{end}}{{template "data" .Data}}>{{template "text" .}}</td>{{end}}{{end}}</tr>
{{end}}</tbody>
</table></div>
{{else}}{{with .Caption}}<p class="caption">{{.}}</p>
{{end}}<p class="none">{{or .None "None."}}</p>
{{end}}{{end}}
{{define "text"}}{{if .Href}}<a href="{{.Href}}">{{.Text}}</a>{{else if .HTML}}{{.HTML}}{{else}}{{.Text}}{{end}}{{end}}
{{define "data"}}{{range .}}{{if eq .Name "overview"}} data-overview="{{.Value}}"{{else if eq .Name "metric"}} data-metric="{{.Value}}"{{else if eq .Name "day"}} data-day="{{.Value}}"{{else if eq .Name "field"}} data-field="{{.Value}}"{{else if eq .Name "policy"}} data-policy="{{.Value}}"{{else if eq .Name "provider"}} data-provider="{{.Value}}"{{else if eq .Name "model"}} data-model="{{.Value}}"{{else if eq .Name "requests"}} data-requests="{{.Value}}"{{else if eq .Name "value"}} data-value="{{.Value}}"{{else if eq .Name "numerator"}} data-numerator="{{.Value}}"{{else if eq .Name "denominator"}} data-denominator="{{.Value}}"{{else if eq .Name "low"}} data-low="{{.Value}}"{{else if eq .Name "high"}} data-high="{{.Value}}"{{end}}{{end}}{{end}}`

// pageCSS is the page's only style sheet. Colours are dark on white with
// no meaning carried by colour alone.
const pageCSS = `:root { color-scheme: light; }
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Liberation Sans", Arial, sans-serif;
  margin: 0 auto; padding: 1rem; max-width: 75rem; color: #111; background: #fff; }
h1 { font-size: 1.5rem; margin: 0 0 .5rem; }
h2 { font-size: 1.2rem; margin: 2rem 0 .6rem; padding-bottom: .2rem; border-bottom: 1px solid #999; }
h3 { font-size: 1.05rem; margin: 1.5rem 0 .5rem; }
p { margin: .4rem 0; }
.scope { overflow-wrap: anywhere; }
nav ul { display: flex; flex-wrap: wrap; gap: .2rem 1rem; margin: .8rem 0; padding: 0; list-style: none; font-size: .875rem; }
a { color: #0b4f8a; }
.wrap { overflow-x: auto; max-width: 100%; margin: .4rem 0 1rem; }
table { border-collapse: collapse; font-size: .875rem; font-variant-numeric: tabular-nums; }
caption { text-align: left; font-weight: 600; padding: .2rem 0; }
th, td { border: 1px solid #bbb; padding: .15rem .5rem; text-align: left; vertical-align: top; }
thead th { background: #e8e8e8; }
tbody th { font-weight: normal; white-space: nowrap; }
.n { text-align: right; white-space: nowrap; }
.figs { display: grid; grid-template-columns: repeat(auto-fill, minmax(min(100%, 24rem), 1fr)); gap: 1rem 1.5rem; margin: .5rem 0 1rem; }
figure { margin: 0; min-width: 0; break-inside: avoid; page-break-inside: avoid; }
figcaption { font-size: .9rem; font-weight: 600; margin-bottom: .3rem; }
.note { font-weight: normal; }
svg.chart { display: block; width: 100%; height: auto; max-width: 40rem; }
details { font-size: .875rem; margin-top: .3rem; }
summary { cursor: pointer; }
.none { font-style: italic; color: #333; }
/* A crossed threshold: a bold, boxed word with the charts' triangle, and
   its row barred at the left and tinted, so it shows in grey and on
   paper as well as in colour. */
.alert-mark { display: inline-block; font-weight: 700; font-size: .8rem; letter-spacing: .04em; white-space: nowrap;
  color: #fff; background: #b34700; border: 1px solid #7a3000; border-radius: 3px; padding: 0 .35rem; margin-left: .3rem; }
tr.alert > * { background: #fff1e6; }
tr.alert > th { font-weight: 700; box-shadow: inset 4px 0 0 #b34700; }
/* The first screen: tiles that wrap to one column in a narrow window. */
.window { font-size: .9rem; margin: 0 0 .5rem; }
.tiles { display: grid; grid-template-columns: repeat(auto-fill, minmax(min(100%, 14rem), 1fr)); gap: .5rem; margin: .3rem 0 .6rem; }
.tile { border: 1px solid #bbb; border-radius: 4px; padding: .35rem .6rem; margin: 0; min-width: 0; break-inside: avoid; }
.tile details { font-size: .75rem; margin-top: .1rem; }
.tile h3 { font-size: .95rem; margin: 0 0 .1rem; overflow-wrap: anywhere; }
.tile .big { font-size: 1.25rem; font-weight: 600; margin: .1rem 0; }
.tile dl { display: grid; grid-template-columns: auto 1fr; gap: 0 .6rem; margin: .2rem 0 0; font-size: .875rem; font-variant-numeric: tabular-nums; }
.tile dt { color: #333; } .tile dd { margin: 0; }
.tile ul { margin: .2rem 0; padding-left: 1.1rem; font-size: .875rem; }
.tile.attention { grid-column: span 2; }
.tile.where { grid-column: span 2; }
.tile.firing { border-left: 5px solid #b34700; }
.tile .state { letter-spacing: .03em; }
.tile .key { overflow-wrap: anywhere; }
.at, .small { font-size: .8rem; color: #333; margin: .1rem 0; }
.chg { font-size: .8rem; white-space: nowrap; }
.chg.noise, .chg.none { color: #444; }
svg.spark { display: block; width: 100%; height: 1.5rem; margin: .15rem 0; }
/* The lead chart at a height that keeps it on the first screen, its
   width following, from the left as every other block. */
.lead svg.chart { width: auto; height: 16rem; max-width: 100%; }
footer { margin-top: 2rem; padding-top: .5rem; border-top: 1px solid #999; font-size: .85rem; overflow-wrap: anywhere; }
@media (max-width: 40rem) { .tile.attention, .tile.where { grid-column: auto; } }
.vh { position: absolute; width: 1px; height: 1px; overflow: hidden; clip-path: inset(50%); white-space: nowrap; }
@media print {
  @page { size: A4; margin: 15mm; }
  body { font-size: 9pt; max-width: none; padding: 0; }
  nav, summary { display: none; }
  h2, h3 { break-after: avoid; page-break-after: avoid; }
  .figs { grid-template-columns: 1fr 1fr; }
  .wrap { overflow: visible; }
  /* Paper does not scroll: a wide table shrinks to the page and its
     cells wrap, long names and numbers included. */
  table { font-size: 7pt; width: 100%; table-layout: fixed; }
  th, td, tbody th, .n { white-space: normal; overflow-wrap: anywhere; padding: .1rem .2rem; }
  tr { break-inside: avoid; }
  details::details-content { content-visibility: visible; display: block; }
  a { color: inherit; }
  .alert-mark { color: #000; background: none; border: 1.5px solid #000; }
  tr.alert > * { background: none; }
  tr.alert > th { box-shadow: inset 3px 0 0 #000; }
}
`
