import GRDB

extension SQLiteStore {
    /// `Schema.migrations` rendered for SQLite, each run once (GRDB records the applied names).
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        for migration in Schema.migrations {
            let statements = migration.statements(in: .sqlite)
            migrator.registerMigration(migration.name) { db in
                for sql in statements { try db.execute(sql: sql) }
            }
        }
        return migrator
    }
}
