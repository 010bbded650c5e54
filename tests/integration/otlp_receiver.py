"""An OTLP/HTTP receiver for the opentelemetry plugin's tests: an HTTP sink on loopback whose
POST bodies are decoded with python3-protobuf (Debian's) into message classes built here from a
FileDescriptorProto with opentelemetry-proto's real field numbers (trace.proto, common.proto,
resource.proto, trace_service.proto). No generated code: the gateway's hand-written encoder is
checked against an independent decoder."""

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from log_sinks import HttpSink

_F = descriptor_pb2.FieldDescriptorProto
_OPT, _REP = _F.LABEL_OPTIONAL, _F.LABEL_REPEATED
_STR, _BYTES, _BOOL = _F.TYPE_STRING, _F.TYPE_BYTES, _F.TYPE_BOOL
_I64, _I32, _DBL, _FX64, _MSG = _F.TYPE_INT64, _F.TYPE_INT32, _F.TYPE_DOUBLE, _F.TYPE_FIXED64, \
    _F.TYPE_MESSAGE

# name -> [(field, number, type, label, message type)]
_MESSAGES = {
    "AnyValue": [("string_value", 1, _STR, _OPT, None), ("bool_value", 2, _BOOL, _OPT, None),
                 ("int_value", 3, _I64, _OPT, None), ("double_value", 4, _DBL, _OPT, None)],
    "KeyValue": [("key", 1, _STR, _OPT, None), ("value", 2, _MSG, _OPT, "AnyValue")],
    "Resource": [("attributes", 1, _MSG, _REP, "KeyValue")],
    "InstrumentationScope": [("name", 1, _STR, _OPT, None), ("version", 2, _STR, _OPT, None)],
    "Status": [("message", 2, _STR, _OPT, None), ("code", 3, _I32, _OPT, None)],
    "Span": [("trace_id", 1, _BYTES, _OPT, None), ("span_id", 2, _BYTES, _OPT, None),
             ("trace_state", 3, _STR, _OPT, None), ("parent_span_id", 4, _BYTES, _OPT, None),
             ("name", 5, _STR, _OPT, None), ("kind", 6, _I32, _OPT, None),
             ("start_time_unix_nano", 7, _FX64, _OPT, None),
             ("end_time_unix_nano", 8, _FX64, _OPT, None),
             ("attributes", 9, _MSG, _REP, "KeyValue"), ("status", 15, _MSG, _OPT, "Status")],
    "ScopeSpans": [("scope", 1, _MSG, _OPT, "InstrumentationScope"),
                   ("spans", 2, _MSG, _REP, "Span")],
    "ResourceSpans": [("resource", 1, _MSG, _OPT, "Resource"),
                      ("scope_spans", 2, _MSG, _REP, "ScopeSpans")],
    "ExportTraceServiceRequest": [("resource_spans", 1, _MSG, _REP, "ResourceSpans")],
}

SERVER, CLIENT = 2, 3
STATUS_ERROR = 2


def _classes():
    fd = descriptor_pb2.FileDescriptorProto(name="sluice_test_otlp.proto", package="otlp",
                                            syntax="proto3")
    for name, fields in _MESSAGES.items():
        m = fd.message_type.add(name=name)
        if name == "AnyValue":
            m.oneof_decl.add(name="value")  # as common.proto: a set 0 or false is still there
        for fname, num, typ, label, tname in fields:
            f = m.field.add(name=fname, number=num, type=typ, label=label)
            if tname:
                f.type_name = ".otlp." + tname
            if name == "AnyValue":
                f.oneof_index = 0
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fd)
    factory = message_factory.MessageFactory(pool)
    get = getattr(message_factory, "GetMessageClass", None)
    out = {}
    for name in _MESSAGES:
        d = pool.FindMessageTypeByName("otlp." + name)
        out[name] = get(d) if get else factory.GetPrototype(d)
    return out


_CLASSES = _classes()


def decode(body):
    """An ExportTraceServiceRequest; asserts every byte belongs to a field the real proto has
    under that number (unknown ones would be dropped by DiscardUnknownFields)."""
    msg = _CLASSES["ExportTraceServiceRequest"]()
    msg.ParseFromString(body)
    msg.DiscardUnknownFields()
    assert len(msg.SerializeToString()) == len(body), "fields under unknown numbers"
    return msg


def value(any_value):
    kind = any_value.WhichOneof("value")
    return getattr(any_value, kind) if kind else None


def attrs(kvs):
    return {kv.key: value(kv.value) for kv in kvs}


class OtlpReceiver(HttpSink):
    """Records the collector POSTs; spans() flattens them into dicts."""

    def requests(self):
        return [decode(b) for b in self.bodies()]

    def spans(self):
        out = []
        for req in self.requests():
            for rs in req.resource_spans:
                resource = attrs(rs.resource.attributes)
                for ss in rs.scope_spans:
                    for s in ss.spans:
                        out.append({
                            "trace_id": s.trace_id.hex(), "span_id": s.span_id.hex(),
                            "parent_span_id": s.parent_span_id.hex(), "name": s.name,
                            "kind": s.kind, "start": s.start_time_unix_nano,
                            "end": s.end_time_unix_nano, "attrs": attrs(s.attributes),
                            "status_code": s.status.code, "status_message": s.status.message,
                            "trace_state": s.trace_state, "resource": resource,
                            "scope": ss.scope.name,
                        })
        return out
