// RAII over the sqlite3 C API for rankscope's SQLite files (the session store, the sweep
// history): one connection, prepared statements with left-to-right binding, errors as Status.
#pragma once

#include <sqlite3.h>

#include <concepts>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "core/status.h"

namespace rankscope::sqlite {

// Owns one connection. Its errors are SQLite's words only; callers add the file and context.
class Connection {
 public:
  explicit Connection(std::string path) : path_(std::move(path)) {}
  ~Connection() { Close(); }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // `flags` as for sqlite3_open_v2.
  Status Open(int flags) {
    int rc = sqlite3_open_v2(path_.c_str(), &db_, flags, nullptr);
    if (rc != SQLITE_OK) {
      Status s = Status::Error(Error(rc));
      Close();
      return s;
    }
    sqlite3_extended_result_codes(db_, 1);
    return Status::Ok();
  }

  // Runs statements without results (schema, pragmas, transactions).
  Status Exec(const char* sql) {
    char* message = nullptr;
    int rc = sqlite3_exec(db_, sql, nullptr, nullptr, &message);
    if (rc == SQLITE_OK) return Status::Ok();
    std::string text = message != nullptr ? message : sqlite3_errstr(rc);
    sqlite3_free(message);
    return Status::Error(text);
  }

  // Closes now, reporting what a deferred close would have hidden.
  Status Close() {
    if (db_ == nullptr) return Status::Ok();
    int rc = sqlite3_close_v2(db_);
    db_ = nullptr;
    if (rc != SQLITE_OK) {
      return Status::Error(std::string("close failed: ") + sqlite3_errstr(rc));
    }
    return Status::Ok();
  }

  // SQLite's description of the last failure, which returned `rc`.
  std::string Error(int rc) const {
    return db_ != nullptr ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
  }

  sqlite3* get() const { return db_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  sqlite3* db_ = nullptr;
};

// Owns one prepared statement. Values are bound left to right (Int, Real, Text, Null) and the
// bind position restarts after each Run(); the first failure sticks in status().
class Statement {
 public:
  Statement(const Connection& db, const char* sql) : db_(db) {
    int rc = sqlite3_prepare_v2(db.get(), sql, -1, &stmt_, nullptr);
    if (rc != SQLITE_OK) {
      prepare_code_ = rc;
      status_ = Status::Error(db.Error(rc));
    }
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  const Status& status() const { return status_; }
  // The SQLite result code of a failed prepare (SQLITE_NOTADB, ...), else SQLITE_OK.
  int prepare_code() const { return prepare_code_; }

  template <std::integral T>
  Statement& Int(T value) {
    // uint64_t ids wrap to int64_t and back exactly (two's complement, C++20).
    return Check(sqlite3_bind_int64(stmt_, ++position_, static_cast<sqlite3_int64>(value)));
  }
  Statement& Real(double value) { return Check(sqlite3_bind_double(stmt_, ++position_, value)); }
  Statement& Text(const std::string& value) {
    return Check(sqlite3_bind_text64(stmt_, ++position_, value.data(), value.size(),
                                     SQLITE_TRANSIENT, SQLITE_UTF8));
  }
  Statement& Null() { return Check(sqlite3_bind_null(stmt_, ++position_)); }
  template <std::integral T>
  Statement& OptionalInt(const std::optional<T>& value) {
    return value.has_value() ? Int(*value) : Null();
  }

  // Executes an INSERT with the bound values, then readies the statement for the next row.
  Status Run() {
    if (status_.ok()) {
      int rc = sqlite3_step(stmt_);
      if (rc != SQLITE_DONE) status_ = Status::Error(db_.Error(rc));
    }
    sqlite3_reset(stmt_);
    position_ = 0;
    return status_;
  }

  // Readies a query to run again, its values to be bound anew from the first.
  void Reset() {
    sqlite3_reset(stmt_);
    position_ = 0;
  }

  // Steps a query: true while a row is available; false at the end or on an error (status()).
  bool Next() {
    if (!status_.ok()) return false;
    int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc != SQLITE_DONE) status_ = Status::Error(db_.Error(rc));
    return false;
  }

  int64_t ColumnInt(int column) const { return sqlite3_column_int64(stmt_, column); }
  double ColumnReal(int column) const { return sqlite3_column_double(stmt_, column); }
  bool ColumnIsNull(int column) const { return sqlite3_column_type(stmt_, column) == SQLITE_NULL; }
  std::string ColumnText(int column) const {
    const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, column));
    int size = sqlite3_column_bytes(stmt_, column);  // after column_text, as SQLite requires
    return text != nullptr ? std::string(text, static_cast<size_t>(size)) : std::string();
  }

 private:
  Statement& Check(int rc) {
    if (rc != SQLITE_OK && status_.ok()) status_ = Status::Error(db_.Error(rc));
    return *this;
  }

  const Connection& db_;
  sqlite3_stmt* stmt_ = nullptr;
  int position_ = 0;
  int prepare_code_ = SQLITE_OK;
  Status status_;
};

}  // namespace rankscope::sqlite
