"""The one SQLAlchemy MetaData every SQL table of memtrove belongs to."""

from sqlalchemy import MetaData

metadata = MetaData()
