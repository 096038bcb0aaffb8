/// LiveRelay's HTTP API as an OpenAPI 3.1 document, served at `/api/openapi.json`. Kept true by
/// `OpenAPITests` (every route documented, every documented route served) and by
/// `scripts/openapi_check.py`, which calls each operation on a running server and checks the
/// answer against the schema given here.
enum OpenAPIDocument {
    static let json = #"""
{
 "openapi": "3.1.0",
 "info": {
  "title": "LiveRelay",
  "version": "0.3.0",
  "description": "LiveRelay's HTTP API, pages and media URLs. Each operation's x-liverelay-permission is the action it needs where an auth section is set (Basic or Bearer; media URLs also take ?token=)."
 },
 "tags": [
  {
   "name": "streams"
  },
  {
   "name": "recordings"
  },
  {
   "name": "media"
  },
  {
   "name": "pages"
  },
  {
   "name": "ingest"
  },
  {
   "name": "meta"
  },
  {
   "name": "webrtc"
  }
 ],
 "components": {
  "schemas": {
   "Error": {
    "type": "object",
    "required": [
     "error"
    ],
    "properties": {
     "error": {
      "type": "string"
     }
    }
   },
   "LatencySummary": {
    "type": "object",
    "required": [
     "count"
    ],
    "properties": {
     "p50_ms": {
      "type": "number"
     },
     "p90_ms": {
      "type": "number"
     },
     "p99_ms": {
      "type": "number"
     },
     "max_ms": {
      "type": "number"
     },
     "count": {
      "type": "integer",
      "minimum": 0
     }
    }
   },
   "StreamMeta": {
    "type": "object",
    "required": [
     "name",
     "keywords"
    ],
    "properties": {
     "name": {
      "type": "string"
     },
     "title": {
      "type": "string"
     },
     "description": {
      "type": "string"
     },
     "keywords": {
      "type": "array",
      "items": {
       "type": "string"
      }
     },
     "preview": {
      "type": "string"
     },
     "hls": {
      "type": "string"
     }
    }
   },
   "LinkHealth": {
    "type": "object",
    "properties": {
     "tracks": {
      "type": "array",
      "items": {
       "type": "object",
       "required": [
        "index",
        "media",
        "packets_received",
        "packets_lost",
        "packets_reordered",
        "jitter"
       ],
       "properties": {
        "index": {
         "type": "integer",
         "minimum": 0
        },
        "media": {
         "type": "string"
        },
        "packets_received": {
         "type": "integer",
         "minimum": 0
        },
        "packets_lost": {
         "type": "integer",
         "minimum": 0
        },
        "packets_reordered": {
         "type": "integer",
         "minimum": 0
        },
        "jitter": {
         "type": "number",
         "description": "seconds"
        }
       }
      }
     },
     "srt": {
      "type": "object",
      "required": [
       "round_trip_ms",
       "packets_received",
       "packets_lost",
       "packets_retransmitted",
       "packets_dropped",
       "receive_mbps"
      ],
      "properties": {
       "round_trip_ms": {
        "type": "number"
       },
       "packets_received": {
        "type": "integer",
        "minimum": 0
       },
       "packets_lost": {
        "type": "integer",
        "minimum": 0
       },
       "packets_retransmitted": {
        "type": "integer",
        "minimum": 0
       },
       "packets_dropped": {
        "type": "integer",
        "minimum": 0
       },
       "receive_mbps": {
        "type": "number"
       }
      }
     }
    }
   },
   "StreamStatus": {
    "type": "object",
    "required": [
     "name",
     "source",
     "state",
     "fps_in",
     "decoding",
     "connections",
     "arrival_to_decoded",
     "damaged",
     "damage_events",
     "rtp_packets_lost",
     "bytes_in",
     "bitrate_in"
    ],
    "properties": {
     "name": {
      "type": "string"
     },
     "title": {
      "type": "string"
     },
     "source": {
      "type": "string",
      "description": "Without credentials"
     },
     "state": {
      "enum": [
       "connecting",
       "live",
       "reconnecting",
       "stopped",
       "idle"
      ]
     },
     "reconnect_attempt": {
      "type": "integer",
      "minimum": 0
     },
     "last_error": {
      "type": "string"
     },
     "since": {
      "type": "string",
      "format": "date-time"
     },
     "signal_lost_since": {
      "type": "string",
      "format": "date-time"
     },
     "codec": {
      "type": "string"
     },
     "width": {
      "type": "integer",
      "minimum": 0
     },
     "height": {
      "type": "integer",
      "minimum": 0
     },
     "fps_in": {
      "type": "number"
     },
     "decoder_path": {
      "type": "string"
     },
     "fallback_reason": {
      "type": "string"
     },
     "decoding": {
      "type": "boolean"
     },
     "connections": {
      "type": "integer",
      "minimum": 0
     },
     "arrival_to_decoded": {
      "$ref": "#/components/schemas/LatencySummary"
     },
     "decode_counters": {
      "type": "object",
      "additionalProperties": {
       "type": "integer"
      }
     },
     "pacing": {
      "enum": [
       "packets",
       "keyframes"
      ]
     },
     "transport_fallback": {
      "type": "string"
     },
     "damaged": {
      "type": "boolean"
     },
     "damaged_since": {
      "type": "string",
      "format": "date-time"
     },
     "damage_events": {
      "type": "integer",
      "minimum": 0
     },
     "rtp_packets_lost": {
      "type": "integer",
      "minimum": 0
     },
     "link": {
      "$ref": "#/components/schemas/LinkHealth"
     },
     "bytes_in": {
      "type": "integer",
      "minimum": 0
     },
     "bitrate_in": {
      "type": "number",
      "description": "bits per second over the last 2 s"
     }
    }
   },
   "OutputStatus": {
    "type": "object",
    "required": [
     "name",
     "kind",
     "state",
     "ordering",
     "freshness",
     "queue_depth",
     "received",
     "delivered",
     "out_of_order",
     "dropped",
     "arrival_to_delivered",
     "capture_to_delivered",
     "errors"
    ],
    "properties": {
     "name": {
      "type": "string"
     },
     "kind": {
      "enum": [
       "decode",
       "preview",
       "frames",
       "hls",
       "record",
       "forward",
       "viewer",
       "rtsp"
      ]
     },
     "state": {
      "enum": [
       "idle",
       "running",
       "reconnecting",
       "faulted",
       "stopped"
      ]
     },
     "ordering": {
      "type": "string"
     },
     "freshness": {
      "enum": [
       "latest",
       "max_age",
       "lossless",
       "clean"
      ]
     },
     "depth": {
      "type": "integer",
      "minimum": 0
     },
     "max_age_ms": {
      "type": "integer",
      "minimum": 0
     },
     "queue_depth": {
      "type": "integer",
      "minimum": 0
     },
     "received": {
      "type": "integer",
      "minimum": 0
     },
     "delivered": {
      "type": "integer",
      "minimum": 0
     },
     "out_of_order": {
      "type": "integer",
      "minimum": 0
     },
     "dropped": {
      "type": "object",
      "additionalProperties": {
       "type": "integer"
      },
      "description": "By reason"
     },
     "arrival_to_delivered": {
      "$ref": "#/components/schemas/LatencySummary"
     },
     "capture_to_delivered": {
      "$ref": "#/components/schemas/LatencySummary"
     },
     "last_error": {
      "type": "string"
     },
     "errors": {
      "type": "integer",
      "minimum": 0
     }
    }
   },
   "StreamView": {
    "type": "object",
    "required": [
     "stream",
     "sinks",
     "forwards",
     "recordings",
     "origin"
    ],
    "properties": {
     "stream": {
      "$ref": "#/components/schemas/StreamStatus"
     },
     "sinks": {
      "type": "array",
      "items": {
       "$ref": "#/components/schemas/OutputStatus"
      }
     },
     "meta": {
      "$ref": "#/components/schemas/StreamMeta"
     },
     "forwards": {
      "type": "array",
      "items": {
       "type": "object"
      }
     },
     "recordings": {
      "type": "array",
      "items": {
       "type": "string"
      }
     },
     "hls": {
      "type": "object",
      "required": [
       "variant",
       "url",
       "media_sequence",
       "segments",
       "target_duration",
       "ended",
       "availability"
      ],
      "properties": {
       "variant": {
        "enum": [
         "mpegts",
         "fmp4",
         "lowLatency"
        ]
       },
       "url": {
        "type": "string"
       },
       "media_sequence": {
        "type": "integer",
        "minimum": 0
       },
       "segments": {
        "type": "integer",
        "minimum": 0
       },
       "target_duration": {
        "type": "integer",
        "minimum": 0
       },
       "ended": {
        "type": "boolean"
       },
       "availability": {
        "$ref": "#/components/schemas/LatencySummary"
       },
       "push": {
        "type": "object"
       },
       "directory": {
        "type": "object"
       }
      }
     },
     "origin": {
      "enum": [
       "config",
       "api"
      ]
     },
     "owner": {
      "type": "string",
      "description": "In a fleet: the node that reads the stream's source (absent: none yet)"
     },
     "node": {
      "type": "string",
      "description": "In a fleet: the node that answered"
     },
     "rendition": {
      "type": "object",
      "description": "A rendition's stream: what it is made from, its size and its encoder (path, and why not hardware)",
      "required": [
       "of",
       "name",
       "height",
       "bitrate_kbps",
       "encoding",
       "frames_encoded"
      ],
      "properties": {
       "of": {
        "type": "string"
       },
       "name": {
        "type": "string"
       },
       "width": {
        "type": "integer"
       },
       "height": {
        "type": "integer"
       },
       "bitrate_kbps": {
        "type": "integer"
       },
       "encoding": {
        "type": "boolean"
       },
       "frames_encoded": {
        "type": "integer"
       },
       "encode_ms": {
        "type": "number",
        "description": "The encoder's own time per picture (scale and encode), mean over the last 30 pictures, in ms."
       },
       "codecs": {
        "type": "string"
       },
       "encoder": {
        "type": "object",
        "required": [
         "path",
         "encoder"
        ],
        "properties": {
         "path": {
          "enum": [
           "vaapi",
           "nvenc",
           "software"
          ]
         },
         "encoder": {
          "type": "string"
         },
         "fallback_reason": {
          "type": "string"
         }
        }
       }
      }
     }
    }
   },
   "FleetReport": {
    "type": "object",
    "required": [
     "node",
     "nodes",
     "leases"
    ],
    "properties": {
     "node": {
      "type": "string"
     },
     "nodes": {
      "type": "array",
      "items": {
       "type": "object",
       "required": [
        "name",
        "url",
        "last_heartbeat",
        "live"
       ],
       "properties": {
        "name": {
         "type": "string"
        },
        "url": {
         "type": "string"
        },
        "rtsp_url": {
         "type": "string"
        },
        "last_heartbeat": {
         "type": "string",
         "format": "date-time"
        },
        "live": {
         "type": "boolean"
        }
       }
      }
     },
     "leases": {
      "type": "array",
      "items": {
       "type": "object",
       "required": [
        "stream",
        "node",
        "until",
        "moves"
       ],
       "properties": {
        "stream": {
         "type": "string"
        },
        "node": {
         "type": "string"
        },
        "until": {
         "type": "string",
         "format": "date-time"
        },
        "moves": {
         "type": "integer"
        }
       }
      }
     }
    }
   },
   "StreamEvent": {
    "type": "object",
    "required": [
     "stream",
     "kind",
     "at"
    ],
    "properties": {
     "stream": {
      "type": "string"
     },
     "kind": {
      "type": "string"
     },
     "at": {
      "type": "string",
      "format": "date-time"
     },
     "attempt": {
      "type": "integer",
      "minimum": 0
     },
     "connection": {
      "type": "integer",
      "minimum": 0
     },
     "detail": {
      "type": "string"
     },
     "details": {
      "type": "object",
      "additionalProperties": {
       "type": "string"
      }
     }
    }
   },
   "RecordedSpans": {
    "type": "object",
    "required": [
     "stream",
     "start",
     "end",
     "spans",
     "gaps",
     "segments",
     "bytes"
    ],
    "properties": {
     "stream": {
      "type": "string"
     },
     "start": {
      "type": "string",
      "format": "date-time"
     },
     "end": {
      "type": "string",
      "format": "date-time"
     },
     "segments": {
      "type": "integer",
      "minimum": 0
     },
     "bytes": {
      "type": "integer",
      "minimum": 0
     },
     "spans": {
      "type": "array",
      "items": {
       "type": "object",
       "required": [
        "start",
        "end",
        "duration",
        "segments",
        "bytes"
       ],
       "properties": {
        "start": {
         "type": "string",
         "format": "date-time"
        },
        "end": {
         "type": "string",
         "format": "date-time"
        },
        "duration": {
         "type": "number"
        },
        "segments": {
         "type": "integer",
         "minimum": 0
        },
        "bytes": {
         "type": "integer",
         "minimum": 0
        }
       }
      }
     },
     "gaps": {
      "type": "array",
      "items": {
       "type": "object",
       "required": [
        "start",
        "end"
       ],
       "properties": {
        "start": {
         "type": "string",
         "format": "date-time"
        },
        "end": {
         "type": "string",
         "format": "date-time"
        },
        "duration": {
         "type": "number"
        }
       }
      }
     }
    }
   },
   "Hold": {
    "type": "object",
    "required": [
     "id",
     "stream",
     "start",
     "end",
     "at"
    ],
    "properties": {
     "id": {
      "type": "integer",
      "minimum": 0
     },
     "stream": {
      "type": "string"
     },
     "start": {
      "type": "string",
      "format": "date-time"
     },
     "end": {
      "type": "string",
      "format": "date-time"
     },
     "reason": {
      "type": "string"
     },
     "at": {
      "type": "string",
      "format": "date-time"
     }
    }
   },
   "AuditEntry": {
    "type": "object",
    "required": [
     "id",
     "action",
     "stream",
     "who",
     "at"
    ],
    "properties": {
     "id": {
      "type": "integer",
      "minimum": 0
     },
     "action": {
      "enum": [
       "playback",
       "export",
       "manifest",
       "hold",
       "release",
       "retention"
      ]
     },
     "stream": {
      "type": "string"
     },
     "who": {
      "type": "string"
     },
     "address": {
      "type": "string"
     },
     "start": {
      "type": "string",
      "format": "date-time"
     },
     "end": {
      "type": "string",
      "format": "date-time"
     },
     "detail": {
      "type": "string"
     },
     "at": {
      "type": "string",
      "format": "date-time"
     }
    }
   },
   "ClipManifest": {
    "type": "object",
    "required": [
     "stream",
     "node",
     "requested_start",
     "requested_duration",
     "start",
     "end",
     "bytes",
     "sha256",
     "segments",
     "pieces",
     "made"
    ],
    "properties": {
     "stream": {
      "type": "string"
     },
     "node": {
      "type": "string"
     },
     "requested_start": {
      "type": "string",
      "format": "date-time"
     },
     "requested_duration": {
      "type": "number"
     },
     "start": {
      "type": "string",
      "format": "date-time"
     },
     "end": {
      "type": "string",
      "format": "date-time"
     },
     "bytes": {
      "type": "integer",
      "minimum": 0
     },
     "sha256": {
      "type": "string",
      "pattern": "^[0-9a-f]{64}$"
     },
     "made": {
      "type": "string",
      "format": "date-time"
     },
     "segments": {
      "type": "array",
      "items": {
       "type": "object",
       "required": [
        "file",
        "start",
        "duration",
        "bytes",
        "sha256",
        "chain"
       ],
       "properties": {
        "file": {
         "type": "string"
        },
        "start": {
         "type": "string",
         "format": "date-time"
        },
        "duration": {
         "type": "number"
        },
        "bytes": {
         "type": "integer",
         "minimum": 0
        },
        "sha256": {
         "type": "string"
        },
        "chain": {
         "type": "string"
        }
       }
      }
     },
     "pieces": {
      "type": "array",
      "items": {
       "type": "object",
       "required": [
        "offset",
        "length",
        "sha256"
       ],
       "properties": {
        "offset": {
         "type": "integer",
         "minimum": 0
        },
        "length": {
         "type": "integer",
         "minimum": 0
        },
        "sha256": {
         "type": "string"
        },
        "file": {
         "type": "string"
        },
        "file_offset": {
         "type": "integer",
         "minimum": 0
        },
        "time": {
         "type": "string",
         "format": "date-time"
        }
       }
      }
     }
    }
   }
  },
  "securitySchemes": {
   "basic": {
    "type": "http",
    "scheme": "basic"
   },
   "bearer": {
    "type": "http",
    "scheme": "bearer",
    "bearerFormat": "JWT"
   }
  },
  "responses": {
   "ICEServers": {
    "description": "As RTCPeerConnection takes them",
    "content": {
     "application/json": {
      "schema": {
       "type": "object",
       "required": [
        "ice_servers"
       ],
       "properties": {
        "ice_servers": {
         "type": "array",
         "items": {
          "type": "object",
          "required": [
           "urls"
          ],
          "properties": {
           "urls": {
            "type": "array",
            "items": {
             "type": "string"
            }
           },
           "username": {
            "type": "string"
           },
           "credential": {
            "type": "string"
           }
          }
         }
        }
       }
      }
     }
    }
   },
   "Unauthorized": {
    "description": "No or wrong credentials (where auth is on)",
    "content": {
     "application/json": {
      "schema": {
       "$ref": "#/components/schemas/Error"
      }
     }
    }
   },
   "Forbidden": {
    "description": "Credentials without the permission",
    "content": {
     "application/json": {
      "schema": {
       "$ref": "#/components/schemas/Error"
      }
     }
    }
   }
  }
 },
 "security": [
  {},
  {
   "basic": []
  },
  {
   "bearer": []
  }
 ],
 "paths": {
  "/": {
   "get": {
    "summary": "The ops wall: every stream this client may read, over one WebSocket",
    "operationId": "wallPage",
    "responses": {
     "200": {
      "description": "The page",
      "content": {
       "text/html": {}
      }
     },
     "401": {
      "$ref": "#/components/responses/Unauthorized"
     },
     "403": {
      "$ref": "#/components/responses/Forbidden"
     }
    },
    "tags": [
     "pages"
    ],
    "x-liverelay-permission": "read",
    "parameters": [
     {
      "name": "only",
      "in": "query",
      "schema": {
       "type": "string"
      },
      "description": "One tile, full size, with its recorded timeline"
     },
     {
      "name": "jpeg",
      "in": "query",
      "schema": {
       "type": "string"
      },
      "description": "JPEG tiles only"
     },
     {
      "name": "freshness",
      "in": "query",
      "schema": {
       "type": "string"
      },
      "description": "This viewer's policy: latest, max_age or lossless"
     }
    ]
   }
  },
  "/api/audit": {
   "get": {
    "summary": "The archive's audit log, newest first",
    "operationId": "audit",
    "responses": {
     "200": {
      "description": "OK",
      "content": {
       "application/json": {
        "schema": {
         "type": "array",
         "items": {
          "$ref": "#/components/schemas/AuditEntry"
         }
        }
       }
      }
     },
     "400": {
      "description": "Bad query",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/Error"
        }
       }
      }
     },
     "401": {
      "$ref": "#/components/responses/Unauthorized"
     },
     "403": {
      "$ref": "#/components/responses/Forbidden"
     }
    },
    "parameters": [
     {
      "name": "stream",
      "in": "query",
      "schema": {
       "type": "string"
      }
     },
     {
      "name": "since",
      "in": "query",
      "schema": {
       "type": "string",
       "format": "date-time"
      }
     },
     {
      "name": "limit",
      "in": "query",
      "schema": {
       "type": "integer",
       "minimum": 1
      }
     }
    ],
    "tags": [
     "recordings"
    ],
    "x-liverelay-permission": "admin"
   }
  },
  "/api/events": {
   "get": {
    "summary": "Server-sent events of the streams this client may read: live, reconnecting, stopped, damaged, repaired, signal_lost, signal_back, publisher_accepted, publisher_refused, segment_complete, viewer_joined, viewer_left",
    "operationId": "events",
    "responses": {
     "200": {
      "description": "One event per state change; data is a StreamEvent",
      "content": {
       "text/event-stream": {
        "schema": {
         "$ref": "#/components/schemas/StreamEvent"
        }
       }
      }
     },
     "401": {
      "$ref": "#/components/responses/Unauthorized"
     },
     "403": {
      "$ref": "#/components/responses/Forbidden"
     }
    },
    "tags": [
     "streams"
    ],
    "x-liverelay-permission": "read",
    "x-streaming": true
   }
  },
  "/api/fleet": {
   "get": {
    "summary": "The fleet's nodes and camera leases, from its database: the same from every node",
    "operationId": "fleet",
    "responses": {
     "200": {
      "description": "Nodes (with their last heartbeat) and the leases in force",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/FleetReport"
        }
       }
      }
     },
     "404": {
      "description": "This server is not a node of a fleet",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/Error"
        }
       }
      }
     },
     "503": {
      "description": "The fleet's database does not answer",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/Error"
        }
       }
      }
     },
     "401": {
      "$ref": "#/components/responses/Unauthorized"
     },
     "403": {
      "$ref": "#/components/responses/Forbidden"
     }
    },
    "tags": [
     "streams"
    ],
    "x-liverelay-permission": "read"
   }
  },
  "/api/openapi.json": {
   "get": {
    "summary": "This document",
    "operationId": "openapi",
    "responses": {
     "200": {
      "description": "OK",
      "content": {
       "application/json": {
        "schema": {
         "type": "object",
         "required": [
          "openapi",
          "paths"
         ]
        }
       }
      }
     },
     "401": {
      "$ref": "#/components/responses/Unauthorized"
     },
     "403": {
      "$ref": "#/components/responses/Forbidden"
     }
    },
    "tags": [
     "meta"
    ],
    "x-liverelay-permission": "read"
   }
  },
  "/api/recordings/{stream}": {
   "get": {
    "summary": "What was recorded between two times: spans and the gaps between them",
    "operationId": "recordedSpans",
    "responses": {
     "200": {
      "description": "OK",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/RecordedSpans"
        }
       }
      }
     },
     "400": {
      "description": "Bad times",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/Error"
        }
       }
      }
     },
     "404": {
      "description": "No such stream",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/Error"
        }
       }
      }
     },
     "401": {
      "$ref": "#/components/responses/Unauthorized"
     },
     "403": {
      "$ref": "#/components/responses/Forbidden"
     }
    },
    "parameters": [
     {
      "name": "stream",
      "in": "path",
      "schema": {
       "type": "string"
      },
      "description": "The stream's name",
      "required": true
     },
     {
      "name": "start",
      "in": "query",
      "schema": {
       "type": "string",
       "format": "date-time"
      }
     },
     {
      "name": "end",
      "in": "query",
      "schema": {
       "type": "string",
       "format": "date-time"
      }
     }
    ],
    "tags": [
     "recordings"
    ],
    "x-liverelay-permission": "playback"
   }
  },
  "/api/recordings/{stream}/holds": {
   "post": {
    "summary": "Keep a range past retention until released",
    "operationId": "addHold",
    "responses": {
     "201": {
      "description": "OK",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/Hold"
        }
       }
      }
     },
     "400": {
      "description": "Bad body",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/Error"
        }
       }
      }
     },
     "404": {
      "description": "No such stream",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/Error"
        }
       }
      }
     },
     "401": {
      "$ref": "#/components/responses/Unauthorized"
     },
     "403": {
      "$ref": "#/components/responses/Forbidden"
     }
    },
    "parameters": [
     {
      "name": "stream",
      "in": "path",
      "schema": {
       "type": "string"
      },
      "description": "The stream's name",
      "required": true
     }
    ],
    "tags": [
     "recordings"
    ],
    "requestBody": {
     "required": true,
     "content": {
      "application/json": {
       "schema": {
        "type": "object",
        "required": [
         "start",
         "end"
        ],
        "properties": {
         "start": {
          "type": "string",
          "format": "date-time"
         },
         "end": {
          "type": "string",
          "format": "date-time"
         },
         "reason": {
          "type": "string"
         }
        }
       },
       "example": {
        "start": "2026-01-01T00:00:00Z",
        "end": "2026-01-01T01:00:00Z",
        "reason": "incident 42"
       }
      }
     }
    },
    "x-liverelay-permission": "admin"
   },
   "get": {
    "summary": "The stream's holds",
    "operationId": "listHolds",
    "responses": {
     "200": {
      "description": "OK",
      "content": {
       "application/json": {
        "schema": {
         "type": "array",
         "items": {
          "$ref": "#/components/schemas/Hold"
         }
        }
       }
      }
     },
     "404": {
      "description": "No such stream",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/Error"
        }
       }
      }
     },
     "401": {
      "$ref": "#/components/responses/Unauthorized"
     },
     "403": {
      "$ref": "#/components/responses/Forbidden"
     }
    },
    "parameters": [
     {
      "name": "stream",
      "in": "path",
      "schema": {
       "type": "string"
      },
      "description": "The stream's name",
      "required": true
     }
    ],
    "tags": [
     "recordings"
    ],
    "x-liverelay-permission": "admin"
   }
  },
  "/api/recordings/{stream}/holds/{id}": {
   "delete": {
    "summary": "Release a hold",
    "operationId": "releaseHold",
    "responses": {
     "204": {
      "description": "Released"
     },
     "404": {
      "description": "No such hold",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/Error"
        }
       }
      }
     },
     "401": {
      "$ref": "#/components/responses/Unauthorized"
     },
     "403": {
      "$ref": "#/components/responses/Forbidden"
     }
    },
    "parameters": [
     {
      "name": "stream",
      "in": "path",
      "schema": {
       "type": "string"
      },
      "description": "The stream's name",
      "required": true
     },
     {
      "name": "id",
      "in": "path",
      "schema": {
       "type": "integer"
      },
      "required": true
     }
    ],
    "tags": [
     "recordings"
    ],
    "x-liverelay-permission": "admin"
   }
  },
  "/api/streams": {
   "get": {
    "summary": "Every stream this client may read, with its outputs",
    "operationId": "listStreams",
    "responses": {
     "200": {
      "description": "OK",
      "content": {
       "application/json": {
        "schema": {
         "type": "array",
         "items": {
          "$ref": "#/components/schemas/StreamView"
         }
        }
       }
      }
     },
     "401": {
      "$ref": "#/components/responses/Unauthorized"
     },
     "403": {
      "$ref": "#/components/responses/Forbidden"
     }
    },
    "tags": [
     "streams"
    ],
    "x-liverelay-permission": "read"
   },
   "post": {
    "summary": "Make a stream at run time (kept in the catalog)",
    "operationId": "addStream",
    "responses": {
     "201": {
      "description": "OK",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/StreamView"
        }
       }
      }
     },
     "400": {
      "description": "A key is wrong (named)",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/Error"
        }
       }
      }
     },
     "409": {
      "description": "The stream exists",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/Error"
        }
       }
      }
     },
     "401": {
      "$ref": "#/components/responses/Unauthorized"
     },
     "403": {
      "$ref": "#/components/responses/Forbidden"
     }
    },
    "tags": [
     "streams"
    ],
    "requestBody": {
     "required": true,
     "content": {
      "application/json": {
       "schema": {
        "allOf": [
         {
          "type": "object",
          "description": "A stream's configuration keys (as in the YAML file)",
          "properties": {
           "source": {
            "type": "string"
           },
           "title": {
            "type": "string"
           }
          },
          "additionalProperties": true
         },
         {
          "required": [
           "name",
           "source"
          ],
          "properties": {
           "name": {
            "type": "string"
           }
          }
         }
        ]
       },
       "example": {
        "name": "openapi-check",
        "source": "testsrc://?size=160x96&fps=10"
       }
      }
     }
    },
    "x-liverelay-permission": "admin"
   }
  },
  "/api/streams/{name}": {
   "get": {
    "summary": "One stream: its state and every output",
    "operationId": "getStream",
    "responses": {
     "200": {
      "description": "OK",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/StreamView"
        }
       }
      }
     },
     "404": {
      "description": "No such stream",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/Error"
        }
       }
      }
     },
     "401": {
      "$ref": "#/components/responses/Unauthorized"
     },
     "403": {
      "$ref": "#/components/responses/Forbidden"
     }
    },
    "parameters": [
     {
      "name": "name",
      "in": "path",
      "schema": {
       "type": "string"
      },
      "description": "The stream's name",
      "required": true
     }
    ],
    "tags": [
     "streams"
    ],
    "x-liverelay-permission": "read"
   },
   "put": {
    "summary": "Replace a stream's configuration at run time",
    "operationId": "replaceStream",
    "responses": {
     "200": {
      "description": "OK",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/StreamView"
        }
       }
      }
     },
     "400": {
      "description": "A key is wrong (named)",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/Error"
        }
       }
      }
     },
     "404": {
      "description": "No such stream",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/Error"
        }
       }
      }
     },
     "401": {
      "$ref": "#/components/responses/Unauthorized"
     },
     "403": {
      "$ref": "#/components/responses/Forbidden"
     }
    },
    "parameters": [
     {
      "name": "name",
      "in": "path",
      "schema": {
       "type": "string"
      },
      "description": "The stream's name",
      "required": true
     }
    ],
    "tags": [
     "streams"
    ],
    "requestBody": {
     "required": true,
     "content": {
      "application/json": {
       "schema": {
        "type": "object",
        "description": "A stream's configuration keys (as in the YAML file)",
        "properties": {
         "source": {
          "type": "string"
         },
         "title": {
          "type": "string"
         }
        },
        "additionalProperties": true
       },
       "example": {
        "source": "testsrc://?size=160x96&fps=10",
        "title": "Replaced"
       }
      }
     }
    },
    "x-liverelay-permission": "admin"
   },
   "delete": {
    "summary": "Remove a stream",
    "operationId": "removeStream",
    "responses": {
     "204": {
      "description": "Removed"
     },
     "404": {
      "description": "No such stream",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/Error"
        }
       }
      }
     },
     "401": {
      "$ref": "#/components/responses/Unauthorized"
     },
     "403": {
      "$ref": "#/components/responses/Forbidden"
     }
    },
    "parameters": [
     {
      "name": "name",
      "in": "path",
      "schema": {
       "type": "string"
      },
      "description": "The stream's name",
      "required": true
     }
    ],
    "tags": [
     "streams"
    ],
    "x-liverelay-permission": "admin"
   }
  },
  "/api/streams/{name}/sinks/{sink}": {
   "patch": {
    "summary": "Switch an output's ordering and freshness policy at run time",
    "operationId": "patchSink",
    "responses": {
     "200": {
      "description": "OK",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/StreamView"
        }
       }
      }
     },
     "400": {
      "description": "A bad policy",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/Error"
        }
       }
      }
     },
     "404": {
      "description": "No such stream or output",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/Error"
        }
       }
      }
     },
     "409": {
      "description": "The output keeps its own policy",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/Error"
        }
       }
      }
     },
     "401": {
      "$ref": "#/components/responses/Unauthorized"
     },
     "403": {
      "$ref": "#/components/responses/Forbidden"
     }
    },
    "parameters": [
     {
      "name": "name",
      "in": "path",
      "schema": {
       "type": "string"
      },
      "description": "The stream's name",
      "required": true
     },
     {
      "name": "sink",
      "in": "path",
      "schema": {
       "type": "string"
      },
      "description": "The output's name",
      "required": true
     }
    ],
    "tags": [
     "streams"
    ],
    "requestBody": {
     "required": true,
     "content": {
      "application/json": {
       "schema": {
        "type": "object",
        "properties": {
         "ordering": {
          "enum": [
           "arrival",
           "pts"
          ]
         },
         "freshness": {
          "enum": [
           "latest",
           "max_age",
           "lossless",
           "clean"
          ]
         },
         "depth": {
          "type": "integer"
         },
         "max_age_ms": {
          "type": "integer"
         }
        }
       },
       "example": {
        "freshness": "latest",
        "depth": 2
       }
      }
     }
    },
    "x-liverelay-permission": "admin"
   }
  },
  "/api/wall": {
   "get": {
    "summary": "The wall's WebSocket (GET with Upgrade: websocket): JSON messages and binary tile frames; ?token= accepted",
    "operationId": "wallSocket",
    "responses": {
     "101": {
      "description": "Switching to WebSocket"
     },
     "404": {
      "description": "Not a WebSocket upgrade (the path answers upgrades only)"
     },
     "401": {
      "$ref": "#/components/responses/Unauthorized"
     },
     "403": {
      "$ref": "#/components/responses/Forbidden"
     }
    },
    "parameters": [
     {
      "name": "token",
      "in": "query",
      "schema": {
       "type": "string"
      },
      "description": "A JWT where the browser cannot send a header"
     }
    ],
    "tags": [
     "pages"
    ],
    "x-liverelay-permission": "read",
    "x-streaming": true
   }
  },
  "/assets/hls.mjs": {
   "get": {
    "summary": "hls.js for the watch page (a copy setup fetched; open to all)",
    "operationId": "hlsLibrary",
    "responses": {
     "200": {
      "description": "The library",
      "content": {
       "text/javascript": {}
      }
     },
     "404": {
      "description": "Not fetched at setup",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/Error"
        }
       }
      }
     }
    },
    "tags": [
     "pages"
    ]
   }
  },
  "/healthz": {
   "get": {
    "summary": "Liveness (open to all)",
    "operationId": "health",
    "responses": {
     "200": {
      "description": "ok",
      "content": {
       "text/plain": {}
      }
     }
    },
    "tags": [
     "meta"
    ]
   }
  },
  "/ingest/{stream}/{file}": {
   "put": {
    "summary": "HLS upload ingest: a playlist or segment into a source: publish stream",
    "operationId": "uploadPut",
    "responses": {
     "201": {
      "description": "Taken"
     },
     "400": {
      "description": "Bad file name",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/Error"
        }
       }
      }
     },
     "404": {
      "description": "No such publish stream",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/Error"
        }
       }
      }
     },
     "409": {
      "description": "Another publisher has the stream",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/Error"
        }
       }
      }
     },
     "415": {
      "description": "Not a playlist or segment",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/Error"
        }
       }
      }
     },
     "503": {
      "description": "Cannot publish now",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/Error"
        }
       }
      }
     },
     "401": {
      "$ref": "#/components/responses/Unauthorized"
     },
     "403": {
      "$ref": "#/components/responses/Forbidden"
     }
    },
    "parameters": [
     {
      "name": "stream",
      "in": "path",
      "schema": {
       "type": "string"
      },
      "description": "The stream's name",
      "required": true
     },
     {
      "name": "file",
      "in": "path",
      "schema": {
       "type": "string"
      },
      "required": true
     }
    ],
    "tags": [
     "ingest"
    ],
    "x-liverelay-permission": "publish"
   },
   "post": {
    "summary": "HLS upload ingest (POST, as some apps send it)",
    "operationId": "uploadPost",
    "responses": {
     "201": {
      "description": "Taken"
     },
     "400": {
      "description": "Bad file name",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/Error"
        }
       }
      }
     },
     "404": {
      "description": "No such publish stream",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/Error"
        }
       }
      }
     },
     "409": {
      "description": "Another publisher has the stream",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/Error"
        }
       }
      }
     },
     "415": {
      "description": "Not a playlist or segment",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/Error"
        }
       }
      }
     },
     "503": {
      "description": "Cannot publish now",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/Error"
        }
       }
      }
     },
     "401": {
      "$ref": "#/components/responses/Unauthorized"
     },
     "403": {
      "$ref": "#/components/responses/Forbidden"
     }
    },
    "parameters": [
     {
      "name": "stream",
      "in": "path",
      "schema": {
       "type": "string"
      },
      "description": "The stream's name",
      "required": true
     },
     {
      "name": "file",
      "in": "path",
      "schema": {
       "type": "string"
      },
      "required": true
     }
    ],
    "tags": [
     "ingest"
    ],
    "x-liverelay-permission": "publish"
   }
  },
  "/metrics": {
   "get": {
    "summary": "Prometheus metrics",
    "operationId": "metrics",
    "responses": {
     "200": {
      "description": "Prometheus text",
      "content": {
       "text/plain": {}
      }
     },
     "401": {
      "$ref": "#/components/responses/Unauthorized"
     },
     "403": {
      "$ref": "#/components/responses/Forbidden"
     }
    },
    "tags": [
     "meta"
    ],
    "x-liverelay-permission": "metrics"
   }
  },
  "/previews": {
   "get": {
    "summary": "The plain grid: one MJPEG image per stream",
    "operationId": "previewsPage",
    "responses": {
     "200": {
      "description": "The page",
      "content": {
       "text/html": {}
      }
     },
     "401": {
      "$ref": "#/components/responses/Unauthorized"
     },
     "403": {
      "$ref": "#/components/responses/Forbidden"
     }
    },
    "tags": [
     "pages"
    ],
    "x-liverelay-permission": "read"
   }
  },
  "/streams/{name}": {
   "get": {
    "summary": "One stream's preview, full size (its public page when it has no preview)",
    "operationId": "streamPage",
    "responses": {
     "200": {
      "description": "The page",
      "content": {
       "text/html": {}
      }
     },
     "404": {
      "description": "No such stream",
      "content": {
       "text/html": {}
      }
     },
     "401": {
      "$ref": "#/components/responses/Unauthorized"
     },
     "403": {
      "$ref": "#/components/responses/Forbidden"
     }
    },
    "parameters": [
     {
      "name": "name",
      "in": "path",
      "schema": {
       "type": "string"
      },
      "description": "The stream's name",
      "required": true
     }
    ],
    "tags": [
     "pages"
    ],
    "x-liverelay-permission": "read"
   }
  },
  "/streams/{name}/hls/{file}": {
   "get": {
    "summary": "HLS: index.m3u8 (LL-HLS: _HLS_msn, _HLS_part, _HLS_skip), segments, parts, init sections",
    "operationId": "hls",
    "responses": {
     "200": {
      "description": "A playlist, segment or part (its own content type)",
      "content": {
       "application/vnd.apple.mpegurl": {}
      }
     },
     "400": {
      "description": "A blocking request too far ahead",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/Error"
        }
       }
      }
     },
     "404": {
      "description": "No such stream, HLS or file",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/Error"
        }
       }
      }
     },
     "503": {
      "description": "Not yet",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/Error"
        }
       }
      }
     },
     "401": {
      "$ref": "#/components/responses/Unauthorized"
     },
     "403": {
      "$ref": "#/components/responses/Forbidden"
     }
    },
    "parameters": [
     {
      "name": "name",
      "in": "path",
      "schema": {
       "type": "string"
      },
      "description": "The stream's name",
      "required": true
     },
     {
      "name": "file",
      "in": "path",
      "schema": {
       "type": "string"
      },
      "description": "index.m3u8, a segment, a part or an init section",
      "required": true
     },
     {
      "name": "_HLS_msn",
      "in": "query",
      "schema": {
       "type": "integer"
      }
     },
     {
      "name": "_HLS_part",
      "in": "query",
      "schema": {
       "type": "integer"
      }
     },
     {
      "name": "_HLS_skip",
      "in": "query",
      "schema": {
       "type": "string"
      }
     },
     {
      "name": "token",
      "in": "query",
      "schema": {
       "type": "string"
      }
     },
     {
      "name": "expires",
      "in": "query",
      "schema": {
       "type": "integer"
      },
      "description": "A signed URL's expiry (Unix seconds; auth.signed_urls)"
     },
     {
      "name": "signature",
      "in": "query",
      "schema": {
       "type": "string"
      },
      "description": "A signed URL's signature: hex HMAC-SHA256 of /streams/NAME/, a newline and the expiry"
     }
    ],
    "tags": [
     "media"
    ],
    "x-liverelay-permission": "read"
   }
  },
  "/streams/{name}/meta.json": {
   "get": {
    "summary": "Title, description, keywords and URLs of a stream",
    "operationId": "streamMeta",
    "responses": {
     "200": {
      "description": "OK",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/StreamMeta"
        }
       }
      }
     },
     "404": {
      "description": "No such stream",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/Error"
        }
       }
      }
     },
     "401": {
      "$ref": "#/components/responses/Unauthorized"
     },
     "403": {
      "$ref": "#/components/responses/Forbidden"
     }
    },
    "parameters": [
     {
      "name": "name",
      "in": "path",
      "schema": {
       "type": "string"
      },
      "description": "The stream's name",
      "required": true
     }
    ],
    "tags": [
     "media"
    ],
    "x-liverelay-permission": "read"
   }
  },
  "/streams/{name}/preview.mjpg": {
   "get": {
    "summary": "MJPEG: the newest picture per viewer (multipart/x-mixed-replace)",
    "operationId": "previewStream",
    "responses": {
     "200": {
      "description": "Pictures until the client leaves",
      "content": {
       "multipart/x-mixed-replace": {}
      }
     },
     "404": {
      "description": "No such stream or no preview",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/Error"
        }
       }
      }
     },
     "429": {
      "description": "Too many viewers from this client",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/Error"
        }
       }
      }
     },
     "401": {
      "$ref": "#/components/responses/Unauthorized"
     },
     "403": {
      "$ref": "#/components/responses/Forbidden"
     }
    },
    "parameters": [
     {
      "name": "name",
      "in": "path",
      "schema": {
       "type": "string"
      },
      "description": "The stream's name",
      "required": true
     },
     {
      "name": "token",
      "in": "query",
      "schema": {
       "type": "string"
      }
     },
     {
      "name": "expires",
      "in": "query",
      "schema": {
       "type": "integer"
      },
      "description": "A signed URL's expiry (Unix seconds; auth.signed_urls)"
     },
     {
      "name": "signature",
      "in": "query",
      "schema": {
       "type": "string"
      },
      "description": "A signed URL's signature: hex HMAC-SHA256 of /streams/NAME/, a newline and the expiry"
     }
    ],
    "tags": [
     "media"
    ],
    "x-liverelay-permission": "read",
    "x-streaming": true
   }
  },
  "/streams/{name}/recording.json": {
   "get": {
    "summary": "The clip's manifest: the range given, its source segments and every piece with its SHA-256",
    "operationId": "recordingManifest",
    "responses": {
     "200": {
      "description": "OK",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/ClipManifest"
        }
       }
      }
     },
     "400": {
      "description": "Bad start or duration",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/Error"
        }
       }
      }
     },
     "404": {
      "description": "Nothing recorded then",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/Error"
        }
       }
      }
     },
     "401": {
      "$ref": "#/components/responses/Unauthorized"
     },
     "403": {
      "$ref": "#/components/responses/Forbidden"
     }
    },
    "parameters": [
     {
      "name": "name",
      "in": "path",
      "schema": {
       "type": "string"
      },
      "description": "The stream's name",
      "required": true
     },
     {
      "name": "start",
      "in": "query",
      "schema": {
       "type": "string",
       "format": "date-time"
      }
     },
     {
      "name": "duration",
      "in": "query",
      "schema": {
       "type": "number"
      }
     },
     {
      "name": "token",
      "in": "query",
      "schema": {
       "type": "string"
      }
     }
    ],
    "tags": [
     "recordings"
    ],
    "x-liverelay-permission": "playback"
   }
  },
  "/streams/{name}/recording.m3u8": {
   "get": {
    "summary": "The archive between two times as an HLS VOD playlist over the recordings' own fragments",
    "operationId": "recordingPlaylist",
    "responses": {
     "200": {
      "description": "The playlist",
      "content": {
       "application/vnd.apple.mpegurl": {}
      }
     },
     "400": {
      "description": "Bad times",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/Error"
        }
       }
      }
     },
     "404": {
      "description": "Nothing recorded then",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/Error"
        }
       }
      }
     },
     "401": {
      "$ref": "#/components/responses/Unauthorized"
     },
     "403": {
      "$ref": "#/components/responses/Forbidden"
     }
    },
    "parameters": [
     {
      "name": "name",
      "in": "path",
      "schema": {
       "type": "string"
      },
      "description": "The stream's name",
      "required": true
     },
     {
      "name": "start",
      "in": "query",
      "schema": {
       "type": "string",
       "format": "date-time"
      }
     },
     {
      "name": "end",
      "in": "query",
      "schema": {
       "type": "string",
       "format": "date-time"
      }
     },
     {
      "name": "token",
      "in": "query",
      "schema": {
       "type": "string"
      }
     }
    ],
    "tags": [
     "recordings"
    ],
    "x-liverelay-permission": "playback"
   }
  },
  "/streams/{name}/recording.mp4": {
   "get": {
    "summary": "One MP4 of a range, made on the fly without re-encoding, Range answered",
    "operationId": "recordingClip",
    "responses": {
     "200": {
      "description": "The clip",
      "content": {
       "video/mp4": {}
      }
     },
     "206": {
      "description": "A range of it",
      "content": {
       "video/mp4": {}
      }
     },
     "400": {
      "description": "Bad start or duration",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/Error"
        }
       }
      }
     },
     "404": {
      "description": "Nothing recorded then",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/Error"
        }
       }
      }
     },
     "416": {
      "description": "Range not satisfiable",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/Error"
        }
       }
      }
     },
     "401": {
      "$ref": "#/components/responses/Unauthorized"
     },
     "403": {
      "$ref": "#/components/responses/Forbidden"
     }
    },
    "parameters": [
     {
      "name": "name",
      "in": "path",
      "schema": {
       "type": "string"
      },
      "description": "The stream's name",
      "required": true
     },
     {
      "name": "start",
      "in": "query",
      "schema": {
       "type": "string",
       "format": "date-time"
      }
     },
     {
      "name": "duration",
      "in": "query",
      "schema": {
       "type": "number"
      },
      "description": "Seconds, at most 86400"
     },
     {
      "name": "token",
      "in": "query",
      "schema": {
       "type": "string"
      }
     }
    ],
    "tags": [
     "recordings"
    ],
    "x-liverelay-permission": "playback"
   }
  },
  "/streams/{name}/recording/{file}": {
   "get": {
    "summary": "A catalogued recording file of the stream, Range answered",
    "operationId": "recordingFile",
    "responses": {
     "200": {
      "description": "The file",
      "content": {
       "video/mp4": {}
      }
     },
     "206": {
      "description": "A range of it",
      "content": {
       "video/mp4": {}
      }
     },
     "404": {
      "description": "Not a catalogued file of this stream",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/Error"
        }
       }
      }
     },
     "416": {
      "description": "Range not satisfiable",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/Error"
        }
       }
      }
     },
     "401": {
      "$ref": "#/components/responses/Unauthorized"
     },
     "403": {
      "$ref": "#/components/responses/Forbidden"
     }
    },
    "parameters": [
     {
      "name": "name",
      "in": "path",
      "schema": {
       "type": "string"
      },
      "description": "The stream's name",
      "required": true
     },
     {
      "name": "file",
      "in": "path",
      "schema": {
       "type": "string"
      },
      "required": true
     },
     {
      "name": "token",
      "in": "query",
      "schema": {
       "type": "string"
      }
     }
    ],
    "tags": [
     "recordings"
    ],
    "x-liverelay-permission": "playback"
   }
  },
  "/streams/{name}/snapshot.jpg": {
   "get": {
    "summary": "The latest picture (the signal-lost slate when the source is away, with X-LiveRelay-Signal: lost)",
    "operationId": "snapshot",
    "responses": {
     "200": {
      "description": "A JPEG",
      "content": {
       "image/jpeg": {}
      }
     },
     "404": {
      "description": "No such stream or no preview",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/Error"
        }
       }
      }
     },
     "503": {
      "description": "No picture yet",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/Error"
        }
       }
      }
     },
     "401": {
      "$ref": "#/components/responses/Unauthorized"
     },
     "403": {
      "$ref": "#/components/responses/Forbidden"
     }
    },
    "parameters": [
     {
      "name": "name",
      "in": "path",
      "schema": {
       "type": "string"
      },
      "description": "The stream's name",
      "required": true
     },
     {
      "name": "token",
      "in": "query",
      "schema": {
       "type": "string"
      }
     },
     {
      "name": "expires",
      "in": "query",
      "schema": {
       "type": "integer"
      },
      "description": "A signed URL's expiry (Unix seconds; auth.signed_urls)"
     },
     {
      "name": "signature",
      "in": "query",
      "schema": {
       "type": "string"
      },
      "description": "A signed URL's signature: hex HMAC-SHA256 of /streams/NAME/, a newline and the expiry"
     }
    ],
    "tags": [
     "media"
    ],
    "x-liverelay-permission": "read"
   }
  },
  "/streams/{name}/watch": {
   "get": {
    "summary": "The public page: WebRTC (WHEP) where the browser and server have it, else HLS in a video element (hls.js where set up); title, description, embed snippet",
    "operationId": "watchPage",
    "responses": {
     "200": {
      "description": "The page",
      "content": {
       "text/html": {}
      }
     },
     "404": {
      "description": "No such stream or no HLS",
      "content": {
       "text/html": {}
      }
     },
     "401": {
      "$ref": "#/components/responses/Unauthorized"
     },
     "403": {
      "$ref": "#/components/responses/Forbidden"
     }
    },
    "parameters": [
     {
      "name": "name",
      "in": "path",
      "schema": {
       "type": "string"
      },
      "description": "The stream's name",
      "required": true
     },
     {
      "name": "native",
      "in": "query",
      "schema": {
       "type": "string"
      },
      "description": "The browser's own HLS player instead of hls.js"
     }
    ],
    "tags": [
     "pages"
    ],
    "x-liverelay-permission": "read"
   }
  },
  "/streams/{name}/whep": {
   "post": {
    "summary": "WHEP: a player's SDP offer for the stream; WebRTC on the server's one UDP port (server.webrtc)",
    "operationId": "whepOffer",
    "requestBody": {
     "required": true,
     "content": {
      "application/sdp": {
       "schema": {
        "type": "string"
       }
      }
     }
    },
    "responses": {
     "201": {
      "description": "The SDP answer (ICE-lite, its candidates in it); Location: the session",
      "headers": {
       "Location": {
        "schema": {
         "type": "string"
        },
        "description": "The session's URL, for DELETE"
       },
       "Link": {
        "schema": {
         "type": "string"
        },
        "description": "One per STUN or TURN URL of server.webrtc.ice_servers (RFC 9725 section 4.6): rel=ice-server, with username and credential (minted for this client from a coturn secret)"
       }
      },
      "content": {
       "application/sdp": {
        "schema": {
         "type": "string"
        }
       }
      }
     },
     "400": {
      "description": "Not an SDP offer with ICE credentials and a sha-256 fingerprint",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/Error"
        }
       }
      }
     },
     "404": {
      "description": "No such stream",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/Error"
        }
       }
      }
     },
     "406": {
      "description": "No format in common (H.264 packetization mode 1, Opus, G.711)",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/Error"
        }
       }
      }
     },
     "415": {
      "description": "Not application/sdp",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/Error"
        }
       }
      }
     },
     "503": {
      "description": "The stream has not connected yet (Retry-After: 1)",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/Error"
        }
       }
      }
     },
     "401": {
      "$ref": "#/components/responses/Unauthorized"
     },
     "403": {
      "$ref": "#/components/responses/Forbidden"
     },
     "429": {
      "description": "This address holds server.limits.per_client.viewers WebRTC sessions already",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/Error"
        }
       }
      }
     }
    },
    "parameters": [
     {
      "name": "name",
      "in": "path",
      "schema": {
       "type": "string"
      },
      "description": "The stream's name",
      "required": true
     }
    ],
    "tags": [
     "webrtc"
    ],
    "x-liverelay-permission": "read"
   },
   "options": {
    "summary": "CORS preflight for players and publishers on other origins (no credentials needed)",
    "operationId": "preflightWhep",
    "responses": {
     "204": {
      "description": "Access-Control-Allow-Methods POST, DELETE, OPTIONS; Allow-Headers Authorization, Content-Type; Expose-Headers Location"
     }
    },
    "parameters": [
     {
      "name": "name",
      "in": "path",
      "schema": {
       "type": "string"
      },
      "description": "The stream's name",
      "required": true
     }
    ],
    "tags": [
     "webrtc"
    ]
   }
  },
  "/streams/{name}/whep/ice-servers": {
   "get": {
    "summary": "The STUN and TURN servers a player should use (server.webrtc.ice_servers), TURN credentials minted for the asker; the pages ask before their offer",
    "operationId": "whepICEServers",
    "responses": {
     "200": {
      "$ref": "#/components/responses/ICEServers"
     },
     "401": {
      "$ref": "#/components/responses/Unauthorized"
     },
     "403": {
      "$ref": "#/components/responses/Forbidden"
     }
    },
    "parameters": [
     {
      "name": "name",
      "in": "path",
      "schema": {
       "type": "string"
      },
      "description": "The stream's name",
      "required": true
     }
    ],
    "tags": [
     "webrtc"
    ],
    "x-liverelay-permission": "read"
   }
  },
  "/streams/{name}/whip/ice-servers": {
   "get": {
    "summary": "The STUN and TURN servers a publisher should use (server.webrtc.ice_servers), TURN credentials minted for the asker; the pages ask before their offer",
    "operationId": "whipICEServers",
    "responses": {
     "200": {
      "$ref": "#/components/responses/ICEServers"
     },
     "401": {
      "$ref": "#/components/responses/Unauthorized"
     },
     "403": {
      "$ref": "#/components/responses/Forbidden"
     }
    },
    "parameters": [
     {
      "name": "name",
      "in": "path",
      "schema": {
       "type": "string"
      },
      "description": "The stream's name",
      "required": true
     }
    ],
    "tags": [
     "webrtc"
    ],
    "x-liverelay-permission": "publish"
   }
  },
  "/streams/{name}/whep/{session}": {
   "delete": {
    "summary": "Ends a WHEP session",
    "operationId": "whepEnd",
    "responses": {
     "200": {
      "description": "Ended"
     },
     "404": {
      "description": "No such session for this stream",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/Error"
        }
       }
      }
     },
     "401": {
      "$ref": "#/components/responses/Unauthorized"
     },
     "403": {
      "$ref": "#/components/responses/Forbidden"
     }
    },
    "parameters": [
     {
      "name": "name",
      "in": "path",
      "schema": {
       "type": "string"
      },
      "description": "The stream's name",
      "required": true
     },
     {
      "name": "session",
      "in": "path",
      "schema": {
       "type": "string"
      },
      "description": "The session's id, from the Location of its 201",
      "required": true
     }
    ],
    "tags": [
     "webrtc"
    ],
    "x-liverelay-permission": "read"
   },
   "patch": {
    "summary": "Trickle ICE: not taken (LiveRelay is ICE-lite and gathers nothing)",
    "operationId": "whepPatch",
    "responses": {
     "405": {
      "description": "Not allowed (Allow: DELETE)",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/Error"
        }
       }
      }
     },
     "401": {
      "$ref": "#/components/responses/Unauthorized"
     },
     "403": {
      "$ref": "#/components/responses/Forbidden"
     }
    },
    "parameters": [
     {
      "name": "name",
      "in": "path",
      "schema": {
       "type": "string"
      },
      "description": "The stream's name",
      "required": true
     },
     {
      "name": "session",
      "in": "path",
      "schema": {
       "type": "string"
      },
      "description": "The session's id, from the Location of its 201",
      "required": true
     }
    ],
    "tags": [
     "webrtc"
    ],
    "x-liverelay-permission": "read"
   },
   "options": {
    "summary": "CORS preflight for players and publishers on other origins (no credentials needed)",
    "operationId": "preflightWhepSession",
    "responses": {
     "204": {
      "description": "Access-Control-Allow-Methods POST, DELETE, OPTIONS; Allow-Headers Authorization, Content-Type; Expose-Headers Location"
     }
    },
    "parameters": [
     {
      "name": "name",
      "in": "path",
      "schema": {
       "type": "string"
      },
      "description": "The stream's name",
      "required": true
     },
     {
      "name": "session",
      "in": "path",
      "schema": {
       "type": "string"
      },
      "description": "The session's id",
      "required": true
     }
    ],
    "tags": [
     "webrtc"
    ]
   }
  },
  "/streams/{name}/whip": {
   "post": {
    "summary": "WHIP (RFC 9725): a publisher's SDP offer for a source: publish stream; its H.264 and Opus become the stream's source",
    "operationId": "whipOffer",
    "requestBody": {
     "required": true,
     "content": {
      "application/sdp": {
       "schema": {
        "type": "string"
       }
      }
     }
    },
    "responses": {
     "201": {
      "description": "The SDP answer (ICE-lite, its candidates in it); Location: the session",
      "headers": {
       "Location": {
        "schema": {
         "type": "string"
        },
        "description": "The session's URL, for DELETE"
       },
       "Link": {
        "schema": {
         "type": "string"
        },
        "description": "One per STUN or TURN URL of server.webrtc.ice_servers (RFC 9725 section 4.6): rel=ice-server, with username and credential (minted for this client from a coturn secret)"
       }
      },
      "content": {
       "application/sdp": {
        "schema": {
         "type": "string"
        }
       }
      }
     },
     "400": {
      "description": "Not an SDP offer with ICE credentials and a sha-256 fingerprint",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/Error"
        }
       }
      }
     },
     "404": {
      "description": "No such stream that takes publishers (source: publish)",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/Error"
        }
       }
      }
     },
     "406": {
      "description": "No format in common (H.264 packetization mode 1, Opus, G.711)",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/Error"
        }
       }
      }
     },
     "415": {
      "description": "Not application/sdp",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/Error"
        }
       }
      }
     },
     "409": {
      "description": "The stream has a publisher already",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/Error"
        }
       }
      }
     },
     "401": {
      "$ref": "#/components/responses/Unauthorized"
     },
     "403": {
      "$ref": "#/components/responses/Forbidden"
     },
     "429": {
      "description": "This address holds server.limits.per_client.viewers WebRTC sessions already",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/Error"
        }
       }
      }
     }
    },
    "parameters": [
     {
      "name": "name",
      "in": "path",
      "schema": {
       "type": "string"
      },
      "description": "The stream's name",
      "required": true
     }
    ],
    "tags": [
     "webrtc"
    ],
    "x-liverelay-permission": "publish"
   },
   "options": {
    "summary": "CORS preflight for players and publishers on other origins (no credentials needed)",
    "operationId": "preflightWhip",
    "responses": {
     "204": {
      "description": "Access-Control-Allow-Methods POST, DELETE, OPTIONS; Allow-Headers Authorization, Content-Type; Expose-Headers Location"
     }
    },
    "parameters": [
     {
      "name": "name",
      "in": "path",
      "schema": {
       "type": "string"
      },
      "description": "The stream's name",
      "required": true
     }
    ],
    "tags": [
     "webrtc"
    ]
   }
  },
  "/streams/{name}/whip/{session}": {
   "delete": {
    "summary": "Ends a WHIP session",
    "operationId": "whipEnd",
    "responses": {
     "200": {
      "description": "Ended"
     },
     "404": {
      "description": "No such session for this stream",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/Error"
        }
       }
      }
     },
     "401": {
      "$ref": "#/components/responses/Unauthorized"
     },
     "403": {
      "$ref": "#/components/responses/Forbidden"
     }
    },
    "parameters": [
     {
      "name": "name",
      "in": "path",
      "schema": {
       "type": "string"
      },
      "description": "The stream's name",
      "required": true
     },
     {
      "name": "session",
      "in": "path",
      "schema": {
       "type": "string"
      },
      "description": "The session's id, from the Location of its 201",
      "required": true
     }
    ],
    "tags": [
     "webrtc"
    ],
    "x-liverelay-permission": "publish"
   },
   "patch": {
    "summary": "Trickle ICE: not taken (LiveRelay is ICE-lite and gathers nothing)",
    "operationId": "whipPatch",
    "responses": {
     "405": {
      "description": "Not allowed (Allow: DELETE)",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/Error"
        }
       }
      }
     },
     "401": {
      "$ref": "#/components/responses/Unauthorized"
     },
     "403": {
      "$ref": "#/components/responses/Forbidden"
     }
    },
    "parameters": [
     {
      "name": "name",
      "in": "path",
      "schema": {
       "type": "string"
      },
      "description": "The stream's name",
      "required": true
     },
     {
      "name": "session",
      "in": "path",
      "schema": {
       "type": "string"
      },
      "description": "The session's id, from the Location of its 201",
      "required": true
     }
    ],
    "tags": [
     "webrtc"
    ],
    "x-liverelay-permission": "publish"
   },
   "options": {
    "summary": "CORS preflight for players and publishers on other origins (no credentials needed)",
    "operationId": "preflightWhipSession",
    "responses": {
     "204": {
      "description": "Access-Control-Allow-Methods POST, DELETE, OPTIONS; Allow-Headers Authorization, Content-Type; Expose-Headers Location"
     }
    },
    "parameters": [
     {
      "name": "name",
      "in": "path",
      "schema": {
       "type": "string"
      },
      "description": "The stream's name",
      "required": true
     },
     {
      "name": "session",
      "in": "path",
      "schema": {
       "type": "string"
      },
      "description": "The session's id",
      "required": true
     }
    ],
    "tags": [
     "webrtc"
    ]
   }
  },
  "/streams/{name}/publish": {
   "get": {
    "summary": "The publish page: a browser's camera and microphone sent to the stream by WHIP (no app)",
    "operationId": "publishPage",
    "responses": {
     "200": {
      "description": "The page",
      "content": {
       "text/html": {}
      }
     },
     "404": {
      "description": "No such stream that takes publishers",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/Error"
        }
       }
      }
     },
     "401": {
      "$ref": "#/components/responses/Unauthorized"
     },
     "403": {
      "$ref": "#/components/responses/Forbidden"
     }
    },
    "parameters": [
     {
      "name": "name",
      "in": "path",
      "schema": {
       "type": "string"
      },
      "description": "The stream's name",
      "required": true
     }
    ],
    "tags": [
     "pages"
    ],
    "x-liverelay-permission": "publish"
   }
  }
 }
}
"""#
}
