package receiver

import (
	"fmt"

	"github.com/orchstat/orchstat/ingest/trace"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
)

// A payload is one export request of a signal, decoded.
type payload interface {
	// lines are its resources, each as a line of the Collector file
	// exporter's JSON, with what was left out: a resource whose line
	// would be longer than ingest reads (trace.MaxLine) is rejected,
	// its items counted and said why.
	lines() (lines [][]byte, items, rejected int64, why string, err error)
	// response is the export response, with a partial success when some
	// items were rejected, as protobuf or JSON.
	response(rejected int64, why string, asJSON bool) ([]byte, error)
}

// A signal is one of OTLP's: its name (the files' prefix), its HTTP
// path, and how its requests decode.
type signal struct {
	name, path string
	decode     func(body []byte, asJSON bool) (payload, error)
}

var signals = []signal{
	{"logs", "/v1/logs", decodeLogs},
	{"traces", "/v1/traces", decodeTraces},
	{"metrics", "/v1/metrics", decodeMetrics},
}

func signalNamed(name string) signal {
	for _, s := range signals {
		if s.name == name {
			return s
		}
	}
	panic("receiver: no signal " + name)
}

// resourceLines is what each payload's lines are: resource i's line and
// item count from one(i), for each of n resources, a line longer than
// ingest reads rejected with its items.
func resourceLines(n int, one func(i int) ([]byte, int64, error)) ([][]byte, int64, int64, string, error) {
	var out [][]byte
	var items, rejected int64
	var why string
	for i := range n {
		b, k, err := one(i)
		if err != nil {
			return nil, 0, 0, "", err
		}
		items += k
		if len(b) > trace.MaxLine {
			rejected, why = rejected+k, tooLong(len(b))
			continue
		}
		out = append(out, b)
	}
	return out, items, rejected, why, nil
}

// tooLong says why a resource was rejected.
func tooLong(n int) string {
	return fmt.Sprintf("a resource's records make a line of %d bytes, longer than ingest reads (%d MiB); send them in smaller requests", n, trace.MaxLine>>20)
}

type logsPayload struct{ req plogotlp.ExportRequest }

func decodeLogs(body []byte, asJSON bool) (payload, error) {
	req := plogotlp.NewExportRequest()
	var err error
	if asJSON {
		err = req.UnmarshalJSON(body)
	} else {
		err = req.UnmarshalProto(body)
	}
	return logsPayload{req}, err
}

func (p logsPayload) lines() ([][]byte, int64, int64, string, error) {
	all := p.req.Logs().ResourceLogs()
	var m plog.JSONMarshaler
	return resourceLines(all.Len(), func(i int) ([]byte, int64, error) {
		one := plog.NewLogs()
		all.At(i).CopyTo(one.ResourceLogs().AppendEmpty())
		b, err := m.MarshalLogs(one)
		return b, int64(one.LogRecordCount()), err
	})
}

func (p logsPayload) response(rejected int64, why string, asJSON bool) ([]byte, error) {
	resp := plogotlp.NewExportResponse()
	if rejected > 0 {
		resp.PartialSuccess().SetRejectedLogRecords(rejected)
		resp.PartialSuccess().SetErrorMessage(why)
	}
	if asJSON {
		return resp.MarshalJSON()
	}
	return resp.MarshalProto()
}

type tracesPayload struct{ req ptraceotlp.ExportRequest }

func decodeTraces(body []byte, asJSON bool) (payload, error) {
	req := ptraceotlp.NewExportRequest()
	var err error
	if asJSON {
		err = req.UnmarshalJSON(body)
	} else {
		err = req.UnmarshalProto(body)
	}
	return tracesPayload{req}, err
}

func (p tracesPayload) lines() ([][]byte, int64, int64, string, error) {
	all := p.req.Traces().ResourceSpans()
	var m ptrace.JSONMarshaler
	return resourceLines(all.Len(), func(i int) ([]byte, int64, error) {
		one := ptrace.NewTraces()
		all.At(i).CopyTo(one.ResourceSpans().AppendEmpty())
		b, err := m.MarshalTraces(one)
		return b, int64(one.SpanCount()), err
	})
}

func (p tracesPayload) response(rejected int64, why string, asJSON bool) ([]byte, error) {
	resp := ptraceotlp.NewExportResponse()
	if rejected > 0 {
		resp.PartialSuccess().SetRejectedSpans(rejected)
		resp.PartialSuccess().SetErrorMessage(why)
	}
	if asJSON {
		return resp.MarshalJSON()
	}
	return resp.MarshalProto()
}

type metricsPayload struct{ req pmetricotlp.ExportRequest }

func decodeMetrics(body []byte, asJSON bool) (payload, error) {
	req := pmetricotlp.NewExportRequest()
	var err error
	if asJSON {
		err = req.UnmarshalJSON(body)
	} else {
		err = req.UnmarshalProto(body)
	}
	return metricsPayload{req}, err
}

func (p metricsPayload) lines() ([][]byte, int64, int64, string, error) {
	all := p.req.Metrics().ResourceMetrics()
	var m pmetric.JSONMarshaler
	return resourceLines(all.Len(), func(i int) ([]byte, int64, error) {
		one := pmetric.NewMetrics()
		all.At(i).CopyTo(one.ResourceMetrics().AppendEmpty())
		b, err := m.MarshalMetrics(one)
		return b, int64(one.DataPointCount()), err
	})
}

func (p metricsPayload) response(rejected int64, why string, asJSON bool) ([]byte, error) {
	resp := pmetricotlp.NewExportResponse()
	if rejected > 0 {
		resp.PartialSuccess().SetRejectedDataPoints(rejected)
		resp.PartialSuccess().SetErrorMessage(why)
	}
	if asJSON {
		return resp.MarshalJSON()
	}
	return resp.MarshalProto()
}
