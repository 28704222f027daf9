import './base.css';
import './nav.css';
import './exchanges.css';
