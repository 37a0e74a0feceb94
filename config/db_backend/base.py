"""PostgreSQL backend that starts the embedded server on first connection.

With `EMBEDDED_PGDATA` in the database settings (DATABASE_URL unset), the first connection a
process opens starts or reuses the embedded server and points HOST/PORT at its socket. Commands
that never touch the database never start it. With DATABASE_URL this is plain PostgreSQL.
"""

from django.db.backends.postgresql import base

from config.embedded_db import ensure_database, ensure_server


class DatabaseWrapper(base.DatabaseWrapper):
    def get_connection_params(self):
        pgdata = self.settings_dict.get("EMBEDDED_PGDATA")
        if pgdata and not self.settings_dict.get("_EMBEDDED_READY"):
            server = ensure_server(pgdata)
            self.settings_dict["HOST"] = server.socket_dir
            self.settings_dict["PORT"] = str(server.port)
            self.settings_dict["USER"] = server.role
            self.settings_dict["PASSWORD"] = server.password
            if self.settings_dict.get("NAME"):
                ensure_database(server, self.settings_dict["NAME"])
            self.settings_dict["_EMBEDDED_READY"] = True
        return super().get_connection_params()
