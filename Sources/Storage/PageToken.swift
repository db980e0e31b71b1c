import Foundation

/// An opaque continuation token for keyset pagination: the last row id of the previous page,
/// wrapped so that clients treat it as opaque ("p1." + decimal row id). Any token the server did
/// not issue is rejected as `invalidPageToken` rather than silently restarting the listing.
public struct PageToken: Equatable, Sendable {
    public let afterRowID: Int64

    public init(afterRowID: Int64) {
        self.afterRowID = afterRowID
    }

    public init(parsing text: String) throws(StorageError) {
        guard text.hasPrefix("p1."), text.utf8.count <= 24,
              let id = Int64(text.dropFirst(3)), id >= 0
        else { throw .invalidPageToken }
        afterRowID = id
    }

    public var text: String { "p1.\(afterRowID)" }
}

/// One page of a listing and the token for the next, nil on the last page.
public struct Page<Item: Sendable>: Sendable {
    public var items: [Item]
    public var nextPageToken: PageToken?

    public init(items: [Item], nextPageToken: PageToken?) {
        self.items = items
        self.nextPageToken = nextPageToken
    }

    /// Cuts `limit + 1` fetched rows into a page and the token for the next one.
    public init(cutting rows: [Item], limit: Int, rowID: (Item) -> Int64) {
        guard rows.count > limit, let last = rows.prefix(limit).last else {
            self.init(items: rows, nextPageToken: nil)
            return
        }
        self.init(items: Array(rows.prefix(limit)), nextPageToken: PageToken(afterRowID: rowID(last)))
    }
}
