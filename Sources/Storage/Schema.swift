/// The database schema as one neutral description, rendered into each backend's SQL by
/// `SQLDialect`: the SQLite store and the PostgreSQL store run the same migrations, in order,
/// each exactly once. Never edit a shipped migration: append the next one.
public enum Schema {
    public static let migrations: [SchemaMigration] = [v1, v2, v3, v4, v5, v6, v7]

    static let v1 = SchemaMigration(name: "v1", steps: [
        .table(TableSpec(name: "serverSecret", columns: [
            ColumnSpec("name", .text, primaryKey: true),
            ColumnSpec("value", .blob),
        ])),
        .table(TableSpec(name: "application", columns: [
            ColumnSpec("id", .rowID),
            ColumnSpec("key", .text, unique: true),
            ColumnSpec("secret", .text),
            ColumnSpec("name", .text),
            ColumnSpec("autoCreateRooms", .boolean, defaultTrue: true),
            ColumnSpec("createdAt", .datetime),
        ])),
        .table(TableSpec(name: "userRegistration", columns: [
            ColumnSpec("applicationId", .integer, references: .cascade("application", "id")),
            ColumnSpec("userId", .text),
            // Canonical decimal of the highest accepted sequence (compared numerically).
            ColumnSpec("lastSequence", .text),
            ColumnSpec("registeredAt", .datetime),
        ], primaryKey: ["applicationId", "userId"])),
        .table(TableSpec(name: "room", columns: [
            ColumnSpec("id", .rowID),
            ColumnSpec("applicationId", .integer, references: .cascade("application", "id")),
            ColumnSpec("roomId", .text),
            ColumnSpec("maxParticipants", .integer),
            ColumnSpec("mixedSpeakers", .integer),
            ColumnSpec("videoSlots", .integer),
            ColumnSpec("createdAt", .datetime),
            ColumnSpec("closedAt", .datetime, nullable: true),
        ])),
        // One open room per (application, roomId); a closed room's ID may be used again.
        .index(IndexSpec(name: "room_open_unique", table: "room", columns: ["applicationId", "roomId"],
                         unique: true, whereNull: "closedAt")),
        .table(TableSpec(name: "call", columns: [
            ColumnSpec("id", .rowID),
            ColumnSpec("callId", .text, unique: true),
            ColumnSpec("applicationId", .integer, references: .cascade("application", "id")),
            ColumnSpec("roomId", .text),
            ColumnSpec("userId", .text),
            ColumnSpec("displayName", .text, nullable: true),
            ColumnSpec("state", .text),
            ColumnSpec("joinedAt", .datetime),
            ColumnSpec("establishedAt", .datetime, nullable: true),
            ColumnSpec("endedAt", .datetime, nullable: true),
            ColumnSpec("endCause", .text, nullable: true),
            ColumnSpec("serverStats", .text, nullable: true),
        ])),
        .index(IndexSpec(name: "call_by_room", table: "call", columns: ["applicationId", "roomId"])),
        .index(IndexSpec(name: "call_by_user", table: "call", columns: ["applicationId", "userId"])),
        .index(IndexSpec(name: "call_by_time", table: "call", columns: ["applicationId", "joinedAt"])),
        .table(TableSpec(name: "callStatistics", columns: [
            ColumnSpec("id", .rowID),
            ColumnSpec("statisticsId", .text, unique: true),
            ColumnSpec("callId", .text, references: .cascade("call", "callId")),
            ColumnSpec("uploadedBy", .text),
            ColumnSpec("idempotencyKey", .text, nullable: true),
            ColumnSpec("bodySHA256", .text),
            ColumnSpec("body", .text),
            ColumnSpec("receivedAt", .datetime),
        ], uniqueKeys: [["callId", "idempotencyKey"]])),
    ])
}

extension Schema {
    /// The cluster: one row per node (its heartbeat and load), one lease per placed room, and
    /// the node that served each call (so that a lost node's calls can be ended).
    static let v2 = SchemaMigration(name: "v2-cluster", steps: [
        .table(TableSpec(name: "node", columns: [
            ColumnSpec("nodeId", .text, primaryKey: true),
            ColumnSpec("advertiseUrl", .text),
            ColumnSpec("mediaAddresses", .text),
            // "up", "draining", "stopped" or "lost".
            ColumnSpec("state", .text),
            ColumnSpec("startedAt", .datetime),
            ColumnSpec("heartbeatAt", .datetime),
            ColumnSpec("participants", .integer),
            ColumnSpec("rooms", .integer),
            ColumnSpec("cpuPercent", .integer),
        ])),
        .table(TableSpec(name: "roomLease", columns: [
            ColumnSpec("applicationId", .integer, references: .cascade("application", "id")),
            ColumnSpec("roomId", .text),
            ColumnSpec("nodeId", .text),
            ColumnSpec("takenAt", .datetime),
            ColumnSpec("expiresAt", .datetime),
        ], primaryKey: ["applicationId", "roomId"])),
        .index(IndexSpec(name: "roomLease_by_node", table: "roomLease", columns: ["nodeId"])),
        .addColumn(table: "call", ColumnSpec("nodeId", .text, nullable: true)),
        .index(IndexSpec(name: "call_open_by_node", table: "call", columns: ["nodeId"], whereNull: "endedAt")),
    ])
}

extension Schema {
    /// Each node's run (a UUID per start) and process, so a node ID is held by one run at a time.
    static let v7 = SchemaMigration(name: "v7-node-instance", steps: [
        .addColumn(table: "node", ColumnSpec("instanceId", .text, nullable: true)),
        .addColumn(table: "node", ColumnSpec("processRef", .text, nullable: true)),
    ])
}

extension Schema {
    /// The caller's custom headers of a call (at most 1,024 bytes of JSON, given at join).
    static let v3 = SchemaMigration(name: "v3-call-headers", steps: [
        .addColumn(table: "call", ColumnSpec("headers", .text, nullable: true)),
    ])
}

/// One named, ordered step of the schema's history.
public struct SchemaMigration: Sendable {
    public let name: String
    public let steps: [SchemaStep]

    /// The migration's statements in `dialect`, to run in one transaction.
    public func statements(in dialect: SQLDialect) -> [String] {
        steps.flatMap { step -> [String] in
            if case .raw(_, let postgres) = step, dialect == .postgres { return postgres }
            return [dialect.render(step)]
        }
    }
}

/// A table or an index to create, or a (nullable) column to add to a shipped table.
public enum SchemaStep: Sendable {
    case table(TableSpec)
    case index(IndexSpec)
    case addColumn(table: String, ColumnSpec)
    /// A statement each dialect spells its own way (triggers); PostgreSQL's as separate
    /// statements (its extended protocol takes one per query).
    case raw(sqlite: String, postgres: [String])
}

/// A table: its columns, an optional composite primary key and composite unique keys.
public struct TableSpec: Sendable {
    public let name: String
    public let columns: [ColumnSpec]
    public let primaryKey: [String]
    public let uniqueKeys: [[String]]

    init(name: String, columns: [ColumnSpec], primaryKey: [String] = [], uniqueKeys: [[String]] = []) {
        self.name = name
        self.columns = columns
        self.primaryKey = primaryKey
        self.uniqueKeys = uniqueKeys
    }
}

/// A column in neutral terms; NOT NULL unless `nullable`.
public struct ColumnSpec: Sendable {
    /// The neutral column types; `rowID` is the auto-incremented 64-bit primary key.
    public enum Kind: Sendable { case rowID, text, integer, boolean, datetime, blob }

    /// A foreign key, deleted with its parent row.
    public struct Reference: Sendable {
        public let table: String
        public let column: String
        static func cascade(_ table: String, _ column: String) -> Reference { Reference(table: table, column: column) }
    }

    public let name: String
    public let kind: Kind
    public let nullable: Bool
    public let unique: Bool
    public let primaryKey: Bool
    public let defaultTrue: Bool
    public let references: Reference?

    init(_ name: String, _ kind: Kind, nullable: Bool = false, unique: Bool = false, primaryKey: Bool = false,
         defaultTrue: Bool = false, references: Reference? = nil) {
        self.name = name
        self.kind = kind
        self.nullable = nullable
        self.unique = unique
        self.primaryKey = primaryKey
        self.defaultTrue = defaultTrue
        self.references = references
    }
}

/// An index, unique or not, optionally partial (`WHERE whereNull IS NULL`).
public struct IndexSpec: Sendable {
    public let name: String
    public let table: String
    public let columns: [String]
    public let unique: Bool
    public let whereNull: String?

    init(name: String, table: String, columns: [String], unique: Bool = false, whereNull: String? = nil) {
        self.name = name
        self.table = table
        self.columns = columns
        self.unique = unique
        self.whereNull = whereNull
    }
}

/// The SQL dialects the schema is rendered in. Identifiers are always double-quoted (the
/// schema's names are camelCase, and PostgreSQL folds unquoted names to lower case).
public enum SQLDialect: Sendable {
    case sqlite
    case postgres

    public func render(_ step: SchemaStep) -> String {
        switch step {
        case .table(let table): return render(table)
        case .index(let index): return render(index)
        case .addColumn(let table, let column): return "ALTER TABLE \(Self.quote(table)) ADD COLUMN \(render(column))"
        case .raw(let sqlite, let postgres): return self == .sqlite ? sqlite : postgres.joined(separator: ";\n")
        }
    }

    func render(_ table: TableSpec) -> String {
        var parts = table.columns.map(render)
        if !table.primaryKey.isEmpty { parts.append("PRIMARY KEY (\(Self.list(table.primaryKey)))") }
        for key in table.uniqueKeys { parts.append("UNIQUE (\(Self.list(key)))") }
        return "CREATE TABLE \(Self.quote(table.name)) (\n  \(parts.joined(separator: ",\n  "))\n)"
    }

    func render(_ column: ColumnSpec) -> String {
        var sql = "\(Self.quote(column.name)) \(type(of: column.kind))"
        if column.kind != .rowID {
            if column.primaryKey { sql += " PRIMARY KEY" }
            if !column.nullable { sql += " NOT NULL" }
            if column.unique { sql += " UNIQUE" }
            if column.defaultTrue { sql += self == .sqlite ? " DEFAULT 1" : " DEFAULT TRUE" }
        }
        if let ref = column.references {
            sql += " REFERENCES \(Self.quote(ref.table))(\(Self.quote(ref.column))) ON DELETE CASCADE"
        }
        return sql
    }

    func type(of kind: ColumnSpec.Kind) -> String {
        switch (self, kind) {
        case (.sqlite, .rowID): "INTEGER PRIMARY KEY AUTOINCREMENT"
        case (.postgres, .rowID): "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY"
        case (_, .text): "TEXT"
        case (.sqlite, .integer): "INTEGER"
        case (.postgres, .integer): "BIGINT"
        case (_, .boolean): "BOOLEAN"
        case (.sqlite, .datetime): "DATETIME"
        case (.postgres, .datetime): "TIMESTAMPTZ"
        case (.sqlite, .blob): "BLOB"
        case (.postgres, .blob): "BYTEA"
        }
    }

    func render(_ index: IndexSpec) -> String {
        var sql = "CREATE \(index.unique ? "UNIQUE " : "")INDEX \(Self.quote(index.name)) ON "
            + "\(Self.quote(index.table))(\(Self.list(index.columns)))"
        if let column = index.whereNull { sql += " WHERE \(Self.quote(column)) IS NULL" }
        return sql
    }

    static func quote(_ name: String) -> String { "\"\(name)\"" }
    static func list(_ names: [String]) -> String { names.map(quote).joined(separator: ", ") }
}
